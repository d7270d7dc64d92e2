#!/usr/bin/env bash
# Real captures on a borrowed one-GPU H200 machine (the workplace's `run` tool, kind nvidia-h200).
#
# Builds nvbandwidth, gpu-burn and nccl-tests from source there, runs them and the nvidia-smi, lspci,
# dmesg ... commands the checks issue, then `provision burnin --local`, and packs every raw output into
# $OUT/captures.tgz (with $OUT/log.txt and $OUT/manifest.tsv beside it). Nothing is fetched there: the
# machine has no network. What it needs travels in the carried, git-ignored folder .devicerun/
# (.git/info/exclude: /.devicerun/), which the lead's session prepared here:
#   .devicerun/src/<tree>       source trees, `git archive` of the fetched upstream repositories;
#                               .devicerun/SOURCES.txt names each tree's repository and commit.
#                               Two of each tool: the version roles/burnin_tools pins (defaults/main.yml:
#                               nccl-tests 2.13.11, nvbandwidth 0.5, gpu-burn 9aefd7c: what a site builds and
#                               what `provision burnin --local` runs here) and upstream HEAD.
#   .devicerun/boost/usr        Debian bookworm libboost-program-options1.74-dev, libboost-program-options1.74.0
#                               and libboost1.74-dev unpacked (dpkg -x); the headers pruned to what
#                               nvbandwidth's sources include (g++ -M closure) plus boost/config, predef and
#                               type_traits whole. nvbandwidth's CMakeLists.txt: find_package(Boost COMPONENTS
#                               program_options REQUIRED) with Boost_USE_STATIC_LIBS ON (libboost_program_options.a).
#   .devicerun/fallback-include nvml.h (NVML 13.3, from NVIDIA/go-nvml pkg/nvml/nvml.h), used only where the
#                               CUDA toolkit there has no nvml.h (nvbandwidth's common.h includes it); nccl/ (the
#                               include folder of the nvidia-nccl-cu13 2.32.6 wheel), only where no nccl.h is there.
#   .devicerun/prebuilt         gpu-burn and nvbandwidth HEAD built on the preparing machine: used only where both
#                               builds of that tool fail there (then named *-prebuilt in the captures).
#   .devicerun/whl              wheels (cp312 manylinux x86_64 or py3) of what `provision burnin --local` imports
#                               that the image lacks or holds at another version (requirements.lock versions).
#
# The call (the lead's session, once):  run(command="bash bench/device/h200_capture.sh", carry=[".devicerun"],
# timeout_s=480). The script keeps itself inside CAPTURE_BUDGET_S (default 430 s): every step runs under
# `timeout`, capped by the time left, and a step that cannot fit is skipped and recorded as such. Every step
# is guarded: a failure is recorded (manifest rc) and the next step runs. captures.tgz is rewritten after each
# phase, so what was captured comes back even if the call is killed.
#
# In captures.tgz (folder captures/):
#   MANIFEST.tsv          one line per step: name, rc (or skip), seconds, timeout, parse tool, command line
#   env/                  what the machine is: OS, kernel, compilers, python, paths found
#   build/<tree>.log,.rc  each build's full output and exit status
#   smi/ sys/             nvidia-smi and system outputs (stdout <name>.txt, stderr <name>.stderr.txt)
#   gpu_burn/ nccl/ nvbandwidth/   the tools' runs, one file per run, pinned version and HEAD
#   burnin/               `provision burnin --local` stdout/stderr and its run folder (report.json, junit/,
#                         raw/, results.jsonl, burnin.prom, report.html)
#   parsed/<name>.json    `provision parse TOOL FILE` of each capture that has a parser (rc in MANIFEST.tsv)
#   SOURCES.txt           the source trees' commits
set -o pipefail
export PYTHONUNBUFFERED=1 LC_ALL=C.UTF-8

T0=$(date +%s)
BUDGET=${CAPTURE_BUDGET_S:-430}      # seconds this script may take in all (the call's timeout_s is 480)
RESERVE=15                           # kept back for the final parse and pack steps
REPO=$(cd "$(dirname "$0")/../.." && pwd)
DR=$REPO/.devicerun
OUT=${OUT:-/tmp/h200cap-out}         # the run tool sets OUT; elsewhere a local folder
W=${CAPTURE_WORK:-/tmp/h200cap}      # builds and captures, outside the checkout (nvbandwidth's CMakeLists runs
                                     # `git describe`, which inside the checkout would name provision's commit)
C=$W/captures
mkdir -p "$OUT" && rm -rf "$W" && mkdir -p "$C"/{env,build,smi,sys,gpu_burn,nccl,nvbandwidth,burnin,parsed} "$W/src" "$W/bin" "$W/link"
LOG=$OUT/log.txt
MAN=$C/MANIFEST.tsv
PARSE_LIST=$W/parse.list
: >"$LOG"; : >"$PARSE_LIST"
printf 'name\trc\tseconds\ttimeout_s\tparse_tool\tcommand\n' >"$MAN"

elapsed() { echo $(( $(date +%s) - T0 )); }
left() { echo $(( BUDGET - $(elapsed) )); }
log() { printf '%s +%03ds %s\n' "$(date -u +%H:%M:%S)" "$(elapsed)" "$*" | tee -a "$LOG"; }
pack() {  # rewrite $OUT/captures.tgz from what is there now (cheap: a few MB at most)
    cp "$MAN" "$OUT/manifest.tsv" 2>/dev/null
    tar -czf "$OUT/captures.tgz.tmp" -C "$W" captures 2>>"$LOG" && mv -f "$OUT/captures.tgz.tmp" "$OUT/captures.tgz"
}

# cap NAME MAX_S PARSE_TOOL CMD...  run CMD (no shell) with stdout -> $C/NAME.txt, stderr -> $C/NAME.stderr.txt,
# under `timeout` of MAX_S or the time left less RESERVE, whichever is less; record it in MANIFEST.tsv; PARSE_TOOL
# (a `provision parse` tool name, or -) is parsed at the end. The working directory is the caller's.
cap() {
    local name=$1 max=$2 tool=$3; shift 3
    local t lim; lim=$(( $(left) - RESERVE )); t=$(( max < lim ? max : lim ))
    local cmd; cmd=$(printf '%q ' "$@")
    if (( t < 3 )); then
        log "SKIP $name (no time left: ${lim}s)"; printf '%s\tskip\t0\t%s\t%s\t%s\n' "$name" "$max" "$tool" "$cmd" >>"$MAN"
        return 0
    fi
    local s=$(date +%s)
    timeout -k 5 "$t" "$@" >"$C/$name.txt" 2>"$C/$name.stderr.txt" </dev/null
    local rc=$?
    local d=$(( $(date +%s) - s ))
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$rc" "$d" "$t" "$tool" "$cmd" >>"$MAN"
    [[ $tool != - ]] && printf '%s\t%s\n' "$tool" "$name" >>"$PARSE_LIST"
    log "rc=$rc ${d}s $name: $cmd"
    return 0
}
# shcap NAME MAX_S SCRIPT: as cap, for a shell line (pipes, cd): recorded as `bash -c SCRIPT`
shcap() { local n=$1 m=$2; shift 2; cap "$n" "$m" - bash -c "$1"; }

log "start: repo $REPO, work $W, out $OUT, budget ${BUDGET}s"
[[ -d $DR ]] || log "ERROR: $DR is missing: the call must carry .devicerun"
cp "$DR/SOURCES.txt" "$C/SOURCES.txt" 2>/dev/null

# ---------------------------------------------------------------- the machine: what is there, where
PY=$(command -v python3)
shcap env/os 10 'cat /etc/os-release; uname -a; nproc; free -g; df -h /tmp; ldd --version | head -1'
shcap env/tools 20 'for t in nvcc nvidia-smi cmake ninja make g++ gcc c++ git lspci dmesg dmidecode ibstat ibv_devinfo dcgmi mpirun timeout; do printf "%s\t%s\n" "$t" "$(command -v $t || echo MISSING)"; done; cmake --version | head -1; g++ --version | head -1; make --version | head -1'
shcap env/python 60 "$PY -VV; $PY -m pip --version; $PY -m pip list 2>/dev/null"
shcap env/vars 5 'env | grep -E "^(PATH|LD_LIBRARY_PATH|LIBRARY_PATH|CPATH|CUDA[A-Z_]*|NVIDIA[A-Z_]*|NCCL[A-Z_]*)=" | sort'
shcap env/ldconfig 10 'ldconfig -p | grep -E "libcuda|libnvidia-ml|libcublas|libcudart|libnccl" ; ls -la /usr/local/nvidia/lib64 2>/dev/null | head -50'

# CUDA_HOME: /usr/local/cuda where it holds nvcc (gpu-burn's Makefile default, CUDAPATH), else the toolkit of
# the nvcc on PATH (a wrapper script there would name the wrong folder, so its include/ is checked).
CUDA_HOME=
for d in /usr/local/cuda "$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")" /usr/local/cuda-13*; do
    [[ -x $d/bin/nvcc && -e $d/include/cuda_runtime.h ]] && { CUDA_HOME=$d; break; }
done
NVCC=${CUDA_HOME:+$CUDA_HOME/bin/nvcc}
SITE=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' 2>/dev/null)
# find_one NAME DIR...: the first file NAME (a glob) under the folders, to depth 6
find_one() { local n=$1; shift; find "$@" -maxdepth 6 -name "$n" 2>/dev/null | sort | head -1; }
# NCCL: the image's pip wheel nvidia-nccl-cu13 (nvidia/nccl/{include,lib}; the module may be a namespace
# package, so both __file__ and __path__ are tried), else any nccl.h under site-packages or the toolkit.
NCCL_PKG=$("$PY" -c 'import os, nvidia.nccl as m; print(os.path.dirname(m.__file__) if getattr(m, "__file__", None) else list(m.__path__)[0])' 2>/dev/null)
NCCL_H=$(find_one nccl.h ${NCCL_PKG:+"$NCCL_PKG"} "$SITE/nvidia" "$CUDA_HOME/include" /usr/include)
NCCL_H_FALLBACK=
if [[ -z $NCCL_H && -e $DR/fallback-include/nccl/nccl.h ]]; then  # the carried NCCL 2.32.6 headers (nvidia-nccl-cu13 wheel)
    NCCL_H=$DR/fallback-include/nccl/nccl.h NCCL_H_FALLBACK=1
fi
NCCL_SO=$(find_one 'libnccl.so*' ${NCCL_PKG:+"$NCCL_PKG"} "$SITE/nvidia" "$CUDA_HOME/lib64" /usr/lib/x86_64-linux-gnu)
# nccl-tests' src/Makefile reads $(NCCL_HOME)/include and -L$(NCCL_HOME)/lib -lnccl: a home of links, since the
# wheel ships only libnccl.so.2 (no libnccl.so for -lnccl).
NCCL_HOME=$W/nccl-home
mkdir -p "$NCCL_HOME/lib"
[[ -n $NCCL_H ]] && ln -sfn "$(dirname "$NCCL_H")" "$NCCL_HOME/include"
[[ -n $NCCL_SO ]] && ln -sf "$NCCL_SO" "$NCCL_HOME/lib/libnccl.so" && ln -sf "$NCCL_SO" "$NCCL_HOME/lib/libnccl.so.2"
# cuBLAS (gpu-burn's gpu_burn-drv.cpp: cublas_v2.h, -lcublas): the toolkit's, else a pip wheel's (nvidia/cu13 or
# nvidia/cublas), whose library has only its versioned name.
CUBLAS_H=$(find_one cublas_v2.h "$CUDA_HOME/include" "$CUDA_HOME/targets" "$SITE/nvidia")
CUBLAS_SO=$(find_one 'libcublas.so*' "$CUDA_HOME/lib64" "$CUDA_HOME/targets" "$SITE/nvidia")
CUBLASLT_SO=$(find_one 'libcublasLt.so*' "$(dirname "${CUBLAS_SO:-/nonexistent}")")
# Link-time names (LIBRARY_PATH=$W/link, read by gcc and the g++ that nvcc and CMake link with): libcuda.so and
# libnvidia-ml.so (nvbandwidth: target_link_libraries(... nvidia-ml cuda); gpu-burn: -lcuda) from the toolkit's
# stubs, else the driver's libraries; libcublas.so; the runtime path is LD_LIBRARY_PATH below.
for lib in libcuda libnvidia-ml; do
    f=$(find_one "$lib.so" "$CUDA_HOME/lib64/stubs" "$CUDA_HOME/targets/x86_64-linux/lib/stubs")
    [[ -z $f ]] && f=$(ldconfig -p 2>/dev/null | awk -v n="$lib.so.1" '$1==n {print $NF; exit}')
    [[ -z $f ]] && f=$(find_one "$lib.so.1" /usr/local/nvidia /usr/lib/x86_64-linux-gnu /usr/lib64 /lib/x86_64-linux-gnu)
    [[ -n $f ]] && ln -sf "$f" "$W/link/$lib.so"
done
# libcudart.so (nccl-tests' -lcudart, gpu-burn's -lcudart): the toolkit's lib64 has it; a pip-laid toolkit (lib/,
# versioned names only) gets a link here
[[ -e $CUDA_HOME/lib64/libcudart.so ]] || { f=$(find_one 'libcudart.so*' "$CUDA_HOME/lib" "$CUDA_HOME/targets" "$SITE/nvidia"); [[ -n $f ]] && ln -sf "$f" "$W/link/libcudart.so"; }
[[ -n $CUBLAS_SO ]] && ln -sf "$CUBLAS_SO" "$W/link/libcublas.so"
[[ -n $CUBLASLT_SO ]] && ln -sf "$CUBLASLT_SO" "$W/link/libcublasLt.so"
export LIBRARY_PATH=$W/link${LIBRARY_PATH:+:$LIBRARY_PATH}
# Run-time libraries: NCCL's and cuBLAS's folders (wheels are not on the loader's path), the toolkit's lib64
# (libcudart.so.13 for nccl-tests), then what the image already sets (the driver's folder).
CUDART_DIR=; [[ -L $W/link/libcudart.so ]] && CUDART_DIR=$(dirname "$(readlink -f "$W/link/libcudart.so")")
export LD_LIBRARY_PATH=$NCCL_HOME/lib${CUBLAS_SO:+:$(dirname "$CUBLAS_SO")}${CUDA_HOME:+:$CUDA_HOME/lib64}${CUDART_DIR:+:$CUDART_DIR}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# nvml.h for nvbandwidth: the toolkit's, else the carried fallback
NVML_H=$(find_one nvml.h "$CUDA_HOME/include" "$CUDA_HOME/targets" /usr/include)
NVML_FLAG=; [[ -z $NVML_H ]] && NVML_FLAG="-I$DR/fallback-include"
{
    echo "CUDA_HOME=$CUDA_HOME"; echo "NVCC=$NVCC"; echo "SITE=$SITE"; echo "NCCL_PKG=$NCCL_PKG"; echo "NCCL_H=$NCCL_H"
    echo "NCCL_SO=$NCCL_SO"; echo "CUBLAS_H=$CUBLAS_H"; echo "CUBLAS_SO=$CUBLAS_SO"; echo "CUBLASLT_SO=$CUBLASLT_SO"
    echo "NVML_H=${NVML_H:-none: using $DR/fallback-include/nvml.h}"; ls -la "$W/link" "$NCCL_HOME/lib" "$NCCL_HOME"
    echo "LIBRARY_PATH=$LIBRARY_PATH"; echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
} >"$C/env/found.txt" 2>&1
log "found: $(tr '\n' ' ' <"$C/env/found.txt" | cut -c1-600)"
[[ -z $CUDA_HOME ]] && log "ERROR: no CUDA toolkit (nvcc with include/cuda_runtime.h) found"
[[ -n $NCCL_H_FALLBACK ]] && log "WARNING: the image has no nccl.h (nvidia-nccl-cu13 wheel without its header): nccl-tests build against the carried NCCL 2.32.6 headers"
[[ -z $NCCL_SO ]] && log "ERROR: no libnccl.so* found: nccl-tests cannot link"
[[ -z $CUBLAS_H ]] && log "ERROR: no cublas_v2.h found: gpu-burn cannot build"
cap env/nvcc_version 20 nvcc "${NVCC:-nvcc}" --version

# ---------------------------------------------------------------- builds, in the background, all at once
# build NAME SECONDS SCRIPT: run SCRIPT in $W/src/NAME (a copy of .devicerun/src/NAME), output to build/NAME.log
declare -A BPID
build() {
    local name=$1 max=$2 script=$3
    cp -r "$DR/src/$name" "$W/src/$name" 2>>"$LOG" || { echo 98 >"$C/build/$name.rc"; return; }
    ( cd "$W/src/$name" && s=$(date +%s) && { echo "+ $script"; timeout -k 5 "$max" bash -c "$script"; } >"$C/build/$name.log" 2>&1
      rc=$?; echo "$rc" >"$C/build/$name.rc"; printf '%s\t%s\t%s\t%s\t-\t%s\n' "build/$name" "$rc" "$(( $(date +%s) - s ))" "$max" "$script" >>"$MAN" ) &
    BPID[$name]=$!
    log "build $name started (pid ${BPID[$name]})"
}
# built NAME: wait for NAME's build; true when it succeeded
built() {
    [[ -n ${BPID[$1]:-} ]] && wait "${BPID[$1]}" 2>/dev/null
    local rc; rc=$(cat "$C/build/$1.rc" 2>/dev/null || echo none)
    log "build $1: rc=$rc"; [[ $rc == 0 ]]
}
BMAX=${CAPTURE_BUILD_S:-$(( $(left) > 300 ? 240 : $(left) - 60 ))}   # a hung build may not eat the run time
J=16                                               # the machine's 16 cores
# gpu-burn: README "Building": make COMPUTE=<cc> CUDAPATH=<toolkit>; the Makefile's override CFLAGS/LDFLAGS append
# to these (-I for a cuBLAS header outside the toolkit). COMPUTE=90 -> nvcc -arch=compute_90 (PTX, H200 = sm_90).
GB_ARGS="COMPUTE=90 CUDAPATH=$CUDA_HOME CFLAGS='${CUBLAS_H:+-I$(dirname "$CUBLAS_H")}' LDFLAGS='-L$W/link'"
build gpu-burn-9aefd7c "$BMAX" "make $GB_ARGS"
build gpu-burn "$BMAX" "make $GB_ARGS"
# nccl-tests: README "Build" (make MPI=0 CUDA_HOME NCCL_HOME NVCC_GENCODE); only the two tests run here, named as
# src/Makefile's targets $(BUILDDIR)/<op>_perf, which pull in their objects and libraries.
NT_ARGS="-j$J MPI=0 CUDA_HOME=$CUDA_HOME NCCL_HOME=$NCCL_HOME NVCC_GENCODE=-gencode=arch=compute_90,code=sm_90"
for t in nccl-tests-2.13.11 nccl-tests; do
    build "$t" "$BMAX" "make -C src $NT_ARGS BUILDDIR=\$PWD/build \$PWD/build/all_reduce_perf \$PWD/build/all_gather_perf"
done
# nvbandwidth: README "Build" (cmake, make) as roles/burnin_tools/vars/main.yml runs it, plus where Boost is
# (its CMake config files, relative to the carried tree) and, where the toolkit lacks it, nvml.h. v0.5 detects
# the GPU's architecture itself (detect_cuda_arch.cmake); CMAKE_CUDA_ARCHITECTURES is honoured from v0.7.
NB_ARGS="-DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_COMPILER=$NVCC -DCMAKE_CUDA_ARCHITECTURES=90"
NB_ARGS+=" -DBoost_DIR=$DR/boost/usr/lib/x86_64-linux-gnu/cmake/Boost-1.74.0 -DCMAKE_PREFIX_PATH=$DR/boost/usr"
[[ -n $NVML_FLAG ]] && NB_ARGS+=" -DCMAKE_CXX_FLAGS=$NVML_FLAG -DCMAKE_CUDA_FLAGS=$NVML_FLAG"
for t in nvbandwidth-0.5 nvbandwidth; do
    build "$t" "$BMAX" "cmake -S . -B build $NB_ARGS && cmake --build build -j $J"
done
# the wheels for provision (README.md nvidia-h200 note: pip install --no-index --no-deps --target), meanwhile
shcap env/pip_install 90 "$PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site $DR/whl/*.whl"

# ---------------------------------------------------------------- nvidia-smi and the system, while building
# The checks' own argv (provision/checks/*.py steps()), then the wider reports the parsers also read.
# smi NAME ...: cap for nvidia-smi; once one timed out (a wedged GPU or driver), the rest are skipped, not waited on.
SMI_HUNG=
smi() {
    if [[ -n $SMI_HUNG ]]; then log "SKIP $1 (an earlier nvidia-smi timed out)"; printf '%s\tskip\t0\t%s\t%s\tnvidia-smi hung earlier\n' "$1" "$2" "$3" >>"$MAN"; return 0; fi
    cap "$@"
    case $(tail -n 1 "$MAN" | cut -f2) in 124|137) SMI_HUNG=1;; esac
}
smi smi/nvidia-smi 20 nvidia-smi nvidia-smi
smi smi/nvidia-smi_-L 20 - nvidia-smi -L
smi smi/nvidia-smi_-q_-x 20 nvidia-smi-qx nvidia-smi -q -x          # gpu_health, gpu_settings, pcie_replays, firmware, nvlink_clique
smi smi/nvidia-smi_-q 20 nvidia-smi-q nvidia-smi -q
smi smi/nvidia-smi_topo_-m 20 nvidia-smi-topo nvidia-smi topo -m    # topology, gpudirect
smi smi/nvidia-smi_nvlink_-s 20 nvidia-smi-nvlink nvidia-smi nvlink -s   # nvlink
smi smi/nvidia-smi_ecc_query 20 nvidia-smi-csv nvidia-smi \
    --query-gpu=index,pci.bus_id,ecc.mode.current,ecc.errors.uncorrected.volatile.total,ecc.errors.corrected.volatile.total,ecc.errors.corrected.aggregate.total \
    --format=csv,nounits                                            # ecc_counters (its FIELDS)
smi smi/nvidia-smi_driver_version 20 nvidia-smi-driver nvidia-smi --query-gpu=driver_version --format=csv,noheader   # stack
smi smi/nvidia-smi_query_wide 20 nvidia-smi-csv nvidia-smi \
    --query-gpu=index,name,pci.bus_id,driver_version,vbios_version,serial,uuid,temperature.gpu,power.draw,power.limit,clocks.sm,clocks.mem,clocks.max.sm,memory.total,memory.used,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max,ecc.mode.current,persistence_mode,compute_mode \
    --format=csv,nounits
smi smi/nvidia-smi_-q_-d_ECC_PAGE_RETIREMENT_ROW_REMAPPER 20 nvidia-smi-q nvidia-smi -q -d ECC,PAGE_RETIREMENT,ROW_REMAPPER
smi smi/nvidia-smi_-q_-d_PERFORMANCE_CLOCK_POWER 20 nvidia-smi-q nvidia-smi -q -d PERFORMANCE,CLOCK,POWER
smi smi/nvidia-smi_topo_-p2p_r 20 - nvidia-smi topo -p2p r
smi smi/nvidia-smi_nvlink_--status 20 - nvidia-smi nvlink --status
smi smi/nvidia-smi_nvlink_-c 20 - nvidia-smi nvlink -c
smi smi/nvidia-smi_-q_-d_FABRIC 20 - nvidia-smi -q -d FABRIC
cap sys/lspci_-D_-vvv 30 lspci lspci -D -vvv                        # pcie_acs
cap sys/lspci_-D_-vv_-d_10de 30 lspci lspci -D -vv -d 10de:         # pcie_link (GPU)
cap sys/lspci_-D_-vv_-d_15b3 30 lspci lspci -D -vv -d 15b3:         # pcie_link (HCA)
cap sys/dmesg 30 dmesg-xid dmesg                                    # xid
cap sys/uname_-r 10 uname-r uname -r                                # firmware (kernel)
cap sys/proc_cmdline 10 proc-cmdline cat /proc/cmdline              # host_settings
cap sys/proc_modules 10 proc-modules cat /proc/modules
cap sys/dmidecode 10 dmidecode dmidecode -t bios -t system          # firmware (bios)
cap sys/ibstat 10 ibstat ibstat                                     # ib_ports
cap sys/ibv_devinfo 10 ibv_devinfo ibv_devinfo                      # firmware, host_settings
pack

# ---------------------------------------------------------------- install as roles/burnin_tools does, run
# <prefix>/<repo>-<version>/bin holds the built files; the PATH folder links the commands, except gpu_burn at
# 9aefd7c, which opens compare.ptx from its working directory: a wrapper starts it in its own folder
# (roles/burnin_tools/tasks/source.yml, vars/main.yml in_own_folder). Prefix and PATH folder under $W here.
# Each tool's pinned version is the one installed for the burn-in; where it did not build, upstream HEAD is
# (nvbandwidth 0.5 and gpu-burn 9aefd7c do not compile against CUDA 13: their cuCtxCreate(&ctx, flags, dev) has the
# pre-13 signature, seen with nvcc 13.0 while preparing this script; nccl-tests 2.13.11 builds), and the standalone
# runs use the same binary. Where HEAD did not build either, gpu-burn and nvbandwidth fall back to .devicerun/prebuilt:
# HEAD built on the preparing machine (Debian 12, g++ 12.2, nvcc 13.0.88, sm_90; linked against libcuda.so.1,
# libnvidia-ml.so.1, libcublas.so.13, which the driver and toolkit here provide), named *-prebuilt in the captures.
PREFIX=$W/opt/burnin-tools
install_tool() {  # install_tool TREE FILE...: copy the built files to $PREFIX/TREE/bin
    mkdir -p "$PREFIX/$1/bin"; local t=$1; shift
    for f in "$@"; do cp -a "$W/src/$t/$f" "$PREFIX/$t/bin/" || log "install $t: $f missing"; done
}
export PATH=$W/bin:$PATH

# gpu-burn (CLI: gpu_burn [-m X%] [-d] [-tc] [-l] [-i N] [-c FILE] [TIME]; gpu_burn-drv.cpp usage())
GB=
if built gpu-burn-9aefd7c; then GB=gpu-burn-9aefd7c GBV=9aefd7c GBK=compare.ptx
elif built gpu-burn; then GB=gpu-burn GBV=HEAD GBK=compare.fatbin
elif [[ -x $DR/prebuilt/gpu-burn/gpu_burn ]]; then  # last resort: HEAD built on the preparing machine (see below)
    cp -r "$DR/prebuilt/gpu-burn" "$W/src/gpu-burn-prebuilt"; GB=gpu-burn-prebuilt GBV=HEAD-prebuilt GBK=compare.fatbin; fi
if [[ -n $GB ]]; then
    install_tool "$GB" gpu_burn "$GBK"
    printf '#!/bin/sh\n# as roles/burnin_tools: gpu_burn reads its kernel file from its working directory\ncd %q && exec ./gpu_burn "$@"\n' \
        "$PREFIX/$GB/bin" >"$W/bin/gpu_burn" && chmod 755 "$W/bin/gpu_burn"
    cap "gpu_burn/${GBV}_-h" 15 - gpu_burn -h
    cap "gpu_burn/${GBV}_-l" 20 - gpu_burn -l
    # the brief's 30 s; the check runs `gpu_burn <duration_s>` (provision/checks/gpu_stress.py)
    cap "gpu_burn/${GBV}_30s" 45 gpu-burn gpu_burn 30
fi
pack
# nccl-tests (README: -b/-e/-f sweep, -g GPUs per process, -c check iterations, default 1; with one GPU the
# all-reduce's busbw is 0: still the real format)
NT=
if built nccl-tests-2.13.11; then NT=nccl-tests-2.13.11 NTV=2.13.11
elif built nccl-tests; then NT=nccl-tests NTV=HEAD; fi
if [[ -n $NT ]]; then
    install_tool "$NT" build/all_reduce_perf build/all_gather_perf
    ln -sf "$PREFIX/$NT/bin/all_reduce_perf" "$W/bin/all_reduce_perf"
    ln -sf "$PREFIX/$NT/bin/all_gather_perf" "$W/bin/all_gather_perf"
    cap "nccl/${NTV}_all_reduce_perf_-b8_-e1G_-f2_-g1" 45 nccl-tests all_reduce_perf -b 8 -e 1G -f 2 -g 1
    cap "nccl/${NTV}_all_gather_perf_-b8_-e1G_-f2_-g1" 45 nccl-tests all_gather_perf -b 8 -e 1G -f 2 -g 1
    # the check's own form (provision/checks/nccl_allreduce.py: -c 1 -n iters -w warmup), at one GPU
    cap "nccl/${NTV}_all_reduce_perf_check_form_-g1" 45 nccl-tests all_reduce_perf -b 8 -e 1073741824 -f 2 -g 1 -c 1 -n 20 -w 5
    # with NCCL's own log lines interleaved (the parser reads past them)
    cap "nccl/${NTV}_all_reduce_perf_-b8_-e128M_-g1_NCCL_DEBUG_INFO" 30 nccl-tests env NCCL_DEBUG=INFO all_reduce_perf -b 8 -e 128M -f 2 -g 1
fi
pack
# nvbandwidth (-l list, -t testcases after one -t, -b buffer MiB, -j JSON; nvbandwidth.cpp's options)
NB=
if built nvbandwidth-0.5; then NB=nvbandwidth-0.5 NBV=0.5
elif built nvbandwidth; then NB=nvbandwidth NBV=HEAD
elif [[ -x $DR/prebuilt/nvbandwidth/build/nvbandwidth ]]; then
    cp -r "$DR/prebuilt/nvbandwidth" "$W/src/nvbandwidth-prebuilt"; NB=nvbandwidth-prebuilt NBV=HEAD-prebuilt; fi
if [[ -n $NB ]]; then
    install_tool "$NB" build/nvbandwidth
    ln -sf "$PREFIX/$NB/bin/nvbandwidth" "$W/bin/nvbandwidth"
    cap "nvbandwidth/${NBV}_-l" 20 - nvbandwidth -l
    # the check's argv (provision/checks/nvbandwidth.py with the h200 profile: -b 512, both testcases after one -t);
    # one GPU: device_to_device is waived
    cap "nvbandwidth/${NBV}_check_form" 60 nvbandwidth nvbandwidth -b 512 -t host_to_device_memcpy_ce device_to_device_memcpy_read_ce
    cap "nvbandwidth/${NBV}_h2d_d2h_ce_sm" 60 nvbandwidth nvbandwidth -t host_to_device_memcpy_ce device_to_host_memcpy_ce \
        host_to_device_bidirectional_memcpy_ce host_to_device_memcpy_sm device_to_host_memcpy_sm
    cap "nvbandwidth/${NBV}_check_form_-j" 45 - nvbandwidth -j -b 512 -t host_to_device_memcpy_ce device_to_device_memcpy_read_ce
fi
pack
{ echo "burn-in tools on PATH ($W/bin):"; ls -la "$W/bin"; echo "versions: gpu-burn ${GBV:-none} nccl-tests ${NTV:-none} nvbandwidth ${NBV:-none}"; } >"$C/env/installed.txt" 2>&1
log "installed: gpu-burn ${GBV:-none}, nccl-tests ${NTV:-none}, nvbandwidth ${NBV:-none}"

# ---------------------------------------------------------------- provision burnin --local
# provision/cli.py: burnin --local (this machine, no SSH), --profile (no inventory), --host (the report's name);
# the tools from PATH ($W/bin above); the run folder under PROVISION_RUNS_DIR (provision/paths.py). The profile
# is the 8-GPU HGX H200's, so the counts (8 GPUs, 18 NVLinks, 8 HCAs) fail or error here: a real run's output.
# (an argv array, not a function: cap runs it under `timeout`, which starts programs only)
PROV=(env "PYTHONPATH=/tmp/site:$REPO" "PROVISION_RUNS_DIR=$W/runs" "$PY" -m provision)
BURN=$(( $(left) - RESERVE - 95 )); (( BURN > 240 )) && BURN=240   # keep ~95 s for the HEAD runs after it
cap burnin/provision_checks 30 - "${PROV[@]}" checks
cap burnin/burnin_local_h200 "$BURN" - "${PROV[@]}" burnin --local --profile h200-sxm-141g-ndr --host h200-device --run-id h200-device -v
cap burnin/report_html 60 - "${PROV[@]}" report "$W/runs/h200-device" --prometheus
cap burnin/evaluate 60 - "${PROV[@]}" evaluate "$W/runs/h200-device"
[[ -d $W/runs/h200-device ]] && cp -a "$W/runs/h200-device" "$C/burnin/run"
pack

# ---------------------------------------------------------------- upstream HEAD: short runs of the newer formats
if [[ $GB != gpu-burn ]] && built gpu-burn; then
    install_tool gpu-burn gpu_burn compare.fatbin
    cap gpu_burn/HEAD_-l 20 - bash -c "cd $PREFIX/gpu-burn/bin && ./gpu_burn -l"
    cap gpu_burn/HEAD_10s 25 gpu-burn bash -c "cd $PREFIX/gpu-burn/bin && ./gpu_burn 10"
fi
if [[ $NT != nccl-tests ]] && built nccl-tests; then
    install_tool nccl-tests build/all_reduce_perf build/all_gather_perf
    cap nccl/HEAD_all_reduce_perf_-b8_-e1G_-f2_-g1 40 nccl-tests "$PREFIX/nccl-tests/bin/all_reduce_perf" -b 8 -e 1G -f 2 -g 1
    cap nccl/HEAD_all_gather_perf_-b8_-e1G_-f2_-g1 40 nccl-tests "$PREFIX/nccl-tests/bin/all_gather_perf" -b 8 -e 1G -f 2 -g 1
fi
if [[ $NB != nvbandwidth ]] && built nvbandwidth; then
    install_tool nvbandwidth build/nvbandwidth
    cap nvbandwidth/HEAD_-l 20 - "$PREFIX/nvbandwidth/bin/nvbandwidth" -l
    cap nvbandwidth/HEAD_check_form 60 nvbandwidth "$PREFIX/nvbandwidth/bin/nvbandwidth" -b 512 -t host_to_device_memcpy_ce device_to_device_memcpy_read_ce
    cap nvbandwidth/HEAD_check_form_-j 45 - "$PREFIX/nvbandwidth/bin/nvbandwidth" -j -b 512 -t host_to_device_memcpy_ce device_to_device_memcpy_read_ce
fi
# only in v0.6+: device_local_copy; host_device_latency_sm also in 0.5
[[ -x $PREFIX/nvbandwidth/bin/nvbandwidth ]] && cap nvbandwidth/HEAD_device_local_copy_latency 45 nvbandwidth \
    "$PREFIX/nvbandwidth/bin/nvbandwidth" -t device_local_copy host_device_latency_sm
pack

# ---------------------------------------------------------------- parse each capture (provision parse TOOL FILE)
RESERVE=3
while IFS=$'\t' read -r tool name; do
    [[ -s $C/$name.txt ]] || continue
    out=parsed/$(echo "$name" | tr '/' '_')
    cap "$out" 15 - "${PROV[@]}" parse "$tool" "$C/$name.txt"
    mv -f "$C/$out.txt" "$C/$out.json" 2>/dev/null
done <"$PARSE_LIST"

log "done in $(elapsed)s"
cp "$LOG" "$C/log.txt"
pack
ls -la "$OUT" | tee -a "$LOG"
exit 0
