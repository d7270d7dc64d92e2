"""The stack check on the seed stack (a GeForce cluster: CUDA 11.8, cuDNN 8.9.6, a Python 3.7 virtualenv,
TensorFlow-GPU 2.4.0), a consistent stack, and the rules one at a time, each against the tables in
provision/plan/data (rows with their sources)."""
import dataclasses

from provision.plan import ERROR, UNKNOWN, WARNING, proposal as proposals, stack
from provision.plan.stack import Env, Package, Stack

SEED = Stack(target="ubuntu2204", gpu="NVIDIA GeForce RTX 4090", compute_capability="8.9", driver="550.127.05",
             cuda="11.8.0", cudnn="8.9.6.50", nccl="2.21.5", nccl_cuda="11.0", interpreter="python3.7",
             envs=(Env("tf", (Package.parse("tensorflow-gpu==2.4.0"),)),))
CONSISTENT = Stack(target="debian12", gpu="NVIDIA H100 80GB HBM3", compute_capability="9.0", driver="550.127.05",
                   cuda="12.4.1", cudnn="9.1.0.70", nccl="2.21.5", nccl_cuda="12.4", interpreter="python3",
                   envs=(Env("pytorch", (Package.parse("torch==2.4.1"), Package.parse("numpy==1.26.4"))),))


def texts(findings, severity):
    return [f"{f.subject}: {f.text}" for f in findings if f.severity == severity]


def test_the_seed_stack_is_rejected_naming_each_conflict():
    findings = stack.check(SEED)
    errors, warnings = texts(findings, ERROR), texts(findings, WARNING)
    assert ("env tf: tensorflow-gpu==2.4.0: TensorFlow 2.4 was built and tested against CUDA 11.0 and cuDNN 8.0, "
            "not 11.8 and 8.9") in "\n".join(errors)
    assert any("the TensorFlow releases tested with CUDA 11.8 (" in e and "need Python 3.8 or newer" in e
               and "not 3.7" in e for e in errors)
    # TensorFlow 2.4's compute_80 is a cubin and PTX of 8.0 (configure.py's "compute_xy": both), and an sm_80 cubin
    # runs on 8.9 by binary compatibility: native kernels, not PTX JIT (issue 23 corrected this verdict).
    assert not any("TensorFlow 2.4's binaries" in f.text for f in findings)
    assert stack.wheel_kernels(SEED) == ["env tf: tensorflow-gpu==2.4.0: its sm_80 cubins run on the sm_89 GPU"]
    assert any(w.startswith("python python3.7: ubuntu2204's python3 is 3.10") for w in warnings)
    assert all(f.source for f in findings)


def test_the_seed_stack_gets_the_nearest_consistent_stack():
    proposal = proposals.nearest(SEED)
    assert proposal is not None
    assert not [f for f in stack.check(proposal.stack) if f.severity == ERROR]
    changes = {var: (now, then) for var, now, then in proposal.changes}
    assert "cuda_toolkit_version" not in changes  # CUDA 11.8 is the oldest toolkit for Ada: kept
    now, then = changes["framework_venv_envs[tf]"]
    assert now == "tensorflow-gpu==2.4.0" and then.startswith("tensorflow==2.1")  # 2.12-2.14 are tested on 11.8
    assert changes["framework_venv_python"][0] == "python3.7"
    assert proposal.stack.python == "3.10"  # ubuntu2204's own python3, within TensorFlow 2.12's 3.8-3.11


def test_a_consistent_stack_passes_every_rule():
    assert texts(stack.check(CONSISTENT), ERROR) == []
    assert proposals.nearest(CONSISTENT) is not None


def test_the_toolkit_must_know_the_gpus_architecture():
    old = dataclasses.replace(SEED, cuda="11.0.3", envs=())
    assert any("cannot build for Ada (sm_89" in e and "needs CUDA 11.8 or newer" in e
               for e in texts(stack.check(old), ERROR))


def test_a_driver_below_the_toolkits_minimum():
    findings = stack.check(dataclasses.replace(CONSISTENT, driver="535.104.05", envs=()))
    # CUDA 12.4.1 needs >= 550.54.15; 535 is above CUDA 12's minor version compatibility floor (525.60.13).
    assert any("below CUDA 12.4.1's 550.54.15: it runs by minor version compatibility" in w
               for w in texts(findings, WARNING))
    findings = stack.check(dataclasses.replace(CONSISTENT, driver="470.82.01", envs=()))
    assert any("CUDA 12.4.1 needs driver >= 550.54.15" in e for e in texts(findings, ERROR))


def test_cudnn_and_nccl_builds_must_exist_for_the_toolkit():
    wrong_major = dataclasses.replace(CONSISTENT, cudnn="8.0.5.39", envs=())
    assert any(e.startswith("cudnn 8.0.5.39: has no build for CUDA 12") for e in texts(stack.check(wrong_major), ERROR))
    no_build = dataclasses.replace(CONSISTENT, nccl_cuda="12.3", envs=())
    assert any(e.startswith("nccl 2.21.5+cuda12.3: NVIDIA builds NCCL 2.21.5 for CUDA ")
               for e in texts(stack.check(no_build), ERROR))


def test_pytorch_wheels_bring_their_own_cuda_but_need_the_python_and_driver():
    old_python = dataclasses.replace(CONSISTENT, interpreter="python3.7")
    assert any("PyTorch 2.4 supports Python 3.8-3.12, not 3.7" in e for e in texts(stack.check(old_python), ERROR))
    old_driver = dataclasses.replace(CONSISTENT, driver="470.82.01", cuda="11.8.0", cudnn="8.9.6.50",
                                     nccl="2.21.5", nccl_cuda="11.0")
    assert any("bundles CUDA 12.1, which needs driver >= 525.60.13" in e for e in texts(stack.check(old_driver), ERROR))
    cu118 = dataclasses.replace(old_driver, driver="520.61.05",
                                envs=(Env("pt", (Package.parse("torch==2.4.1+cu118"),)),))
    assert texts(stack.check(cu118), ERROR) == []


def test_an_unpinned_framework_is_unknown_not_a_pass():
    # issue 23: what the plan cannot check is "unknown" (exit 7), no longer a warning that exits 0
    loose = dataclasses.replace(CONSISTENT, envs=(Env("pt", (Package.parse("torch>=2.0"),)),))
    assert any("not pinned with ==" in u for u in texts(stack.check(loose), UNKNOWN))


def test_tensorflow_gpu_after_2_11_is_not_a_gpu_build():
    stub = dataclasses.replace(SEED, interpreter="python3.10",
                               envs=(Env("tf", (Package.parse("tensorflow-gpu==2.12.0"),)),),
                               cudnn="8.6.0.163")
    assert any("published as tensorflow" in e for e in texts(stack.check(stub), ERROR))


H100_PY310 = dataclasses.replace(CONSISTENT, target="ubuntu2204", interpreter="python3")  # Python 3.10


def test_torch_1_12_on_an_h100_is_a_known_incompatibility_no_sm_90_kernels():
    # issue 23: torch==1.12.1 passed on an H100. Its wheels (PyPI's cu102, and cu113 / cu116) hold cubins up to sm_75
    # / sm_86 and no PTX: neither kernels nor PTX for Hopper, an error, with the arch list's source.
    for pin, built in (("torch==1.12.1", "sm_35, sm_37, sm_50, sm_60, sm_61, sm_70, sm_75"),
                       ("torch==1.12.1+cu116", "sm_37, sm_50, sm_60, sm_61, sm_70, sm_75, sm_80, sm_86")):
        s = dataclasses.replace(H100_PY310, envs=(Env("pt", (Package.parse(pin),)),))
        findings = stack.check(s)
        errors = [f for f in findings if f.severity == ERROR]
        assert [f.text for f in errors] == [f"PyTorch 1.12+cu1{'02' if pin.endswith('1') else '16'}'s binaries hold "
                                            "neither kernels nor PTX for the NVIDIA H100 80GB HBM3's Hopper (sm_90) "
                                            f"(built for {built})"]
        assert "moi90/pytorch_compute_capabilities" in errors[0].source
        assert not [f for f in findings if f.severity == UNKNOWN]
        proposal = proposals.nearest(s)
        assert proposal is not None and not proposal.unknowns
        assert stack.wheel_kernels(proposal.stack)[0].endswith("its sm_90 cubins run on the sm_90 GPU")


def test_a_release_outside_the_tables_is_unknown_naming_what_was_not_checked():
    s = dataclasses.replace(H100_PY310, envs=(Env("pt", (Package.parse("torch==1.11.0"),)),))
    findings = stack.check(s)
    assert texts(findings, ERROR) == [] and texts(findings, WARNING) == []
    assert texts(findings, UNKNOWN) == ["env pt: torch==1.11.0: release not in the pytorch table (1.12-2.8): its "
                                        "Python range, CUDA and kernels for the NVIDIA H100 80GB HBM3 are not checked"]


def test_every_framework_with_a_pinned_gpu_wheel_has_its_architectures_checked():
    # a wheel whose architectures the tables do not hold is unknown (PyTorch 2.6+: the conda channel stops at 2.5)
    def unknown(pin):
        s = dataclasses.replace(H100_PY310, envs=(Env("e", (Package.parse(pin),)),))
        return [u for u in texts(stack.check(s), UNKNOWN) if "wheel architectures are not in the table" in u]
    assert unknown("torch==2.6.0") and not unknown("torch==2.5.1")
    # JAX 0.4.30's jaxlib: .bazelrc sm_50,sm_60,sm_70,sm_80,compute_90; compute_90 holds a cubin of 9.0
    assert not unknown("jax[cuda12]==0.4.30")
    jax = dataclasses.replace(H100_PY310, envs=(Env("e", (Package.parse("jax[cuda12]==0.4.30"),)),))
    assert stack.wheel_kernels(jax) == ["env e: jax[cuda12]==0.4.30: its sm_90 cubins run on the sm_90 GPU"]
    # TensorFlow 2.15-2.17 (CUDA 12 builds): not verified, so unknown; 2.12-2.14 and 2.18 are checked
    assert unknown("tensorflow[and-cuda]==2.15.0") and not unknown("tensorflow[and-cuda]==2.14.0")


def test_ptx_only_is_a_warning_and_sm_cubins_of_another_major_do_not_count():
    # TensorFlow 2.3: sm_35 ... sm_61 and compute_70 (a cubin of 7.0, PTX of 7.0): on Ada (8.9) only the PTX serves
    s = dataclasses.replace(SEED, cuda="10.1.243", cudnn="7.6.5", interpreter="python3.8",
                            envs=(Env("tf", (Package.parse("tensorflow-gpu==2.3.0"),)),))
    assert any("TensorFlow 2.3's binaries hold no kernels for the NVIDIA GeForce RTX 4090's Ada (sm_89): they rest on "
               "PTX JIT from compute_70" in w for w in texts(stack.check(s), WARNING))


def test_the_seeds_proposal_is_planned_again_with_its_kernels_checked():
    # issue 23: the proposal (TensorFlow 2.12 on the RTX 4090) left Ada's kernels "not checked"
    proposal = proposals.nearest(SEED)
    assert proposal is not None and proposal.unknowns == () and proposal.warnings == ()
    assert stack.check(proposal.stack) == []  # the same rules, on the whole proposed stack
    assert stack.wheel_kernels(proposal.stack) == ["env tf: tensorflow==2.12.0: its sm_80 cubins run on the sm_89 GPU"]
