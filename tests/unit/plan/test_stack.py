"""The stack check on the seed stack (a GeForce cluster: CUDA 11.8, cuDNN 8.9.6, a Python 3.7 virtualenv,
TensorFlow-GPU 2.4.0), a consistent stack, and the rules one at a time, each against the tables in
provision/plan/data (rows with their sources)."""
import dataclasses

from provision.plan import ERROR, WARNING, stack
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
    assert any("TensorFlow 2.4's binaries hold no kernels for the NVIDIA GeForce RTX 4090's Ada (sm_89): they rest "
               "on PTX JIT from compute_80" in w for w in warnings)
    assert any(w.startswith("python python3.7: ubuntu2204's python3 is 3.10") for w in warnings)
    assert all(f.source for f in findings)


def test_the_seed_stack_gets_the_nearest_consistent_stack():
    proposal = stack.nearest(SEED)
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
    assert stack.nearest(CONSISTENT) is not None


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


def test_an_unpinned_framework_is_a_warning_not_a_pass():
    loose = dataclasses.replace(CONSISTENT, envs=(Env("pt", (Package.parse("torch>=2.0"),)),))
    assert any("not pinned with ==" in w for w in texts(stack.check(loose), WARNING))


def test_tensorflow_gpu_after_2_11_is_not_a_gpu_build():
    stub = dataclasses.replace(SEED, interpreter="python3.10",
                               envs=(Env("tf", (Package.parse("tensorflow-gpu==2.12.0"),)),),
                               cudnn="8.6.0.163")
    assert any("published as tensorflow" in e for e in texts(stack.check(stub), ERROR))
