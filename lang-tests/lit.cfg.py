# lit configuration of Delta's language tests: every .dl file under
# lang-tests/ is a test whose RUN lines call %dlc, FileCheck and not.
# -*- Python -*-
import os
import shutil

import lit.formats

config.name = "Delta"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".dl"]
config.excludes = ["Inputs", "utils"]
config.test_source_root = os.path.dirname(os.path.abspath(__file__))
config.test_exec_root = os.path.join(config.delta_obj_root, "lang-tests")

python = "/usr/bin/python3"
utils = os.path.join(config.test_source_root, "utils")

# `%run_both [options] FILE` runs main interpreted and compiled, fails if
# the two differ, and prints the output once (utils/run_both.py). It must
# come before %dlc, which it starts with.
config.substitutions.append(
    ("%run_both",
     f"{python} {os.path.join(utils, 'run_both.py')} {config.dlc_path}"))
config.substitutions.append(("%dlc", config.dlc_path))
# `%extract_ptx LIB OUT` writes the PTX module embedded in a library built
# with --target=cuda (utils/extract_ptx.py).
config.substitutions.append(
    ("%extract_ptx", f"{python} {os.path.join(utils, 'extract_ptx.py')}"))
# `%cc` compiles and links C programs against generated libraries, with
# the sanitizers of a sanitizer build (whose runtime the libraries carry).
cc = "clang-19" if shutil.which("clang-19") else "cc"
if config.delta_sanitize.upper() in ("ON", "1", "TRUE", "YES"):
    cc += " -fsanitize=address,undefined"
config.substitutions.append(("%cc", cc))
# `%expect_exit N cmd…` runs cmd, passes its output through, and fails
# unless it exits with status N (not merely non-zero, and never a signal).
config.substitutions.append(
    ("%expect_exit", f"{python} {os.path.join(utils, 'expect_exit.py')}"))
# FileCheck and not from LLVM 19's tools, matched as whole words so that
# e.g. `--check-prefix=NOTE` is left alone.
for tool in ["FileCheck", "not"]:
    config.substitutions.append(
        (rf"(?<![\w.\-/=]){tool}(?![\w.\-])",
         os.path.join(config.llvm_tools_dir, tool)))

config.environment["PATH"] = os.pathsep.join(
    [config.llvm_tools_dir, config.environment.get("PATH", "")])
# A crash must look like a crash to `not`, not like a compile error.
config.environment["DLC_KEEP_CRASH_SIGNALS"] = "1"
config.environment["NO_COLOR"] = "1"
# The compilation cache of `dlc run` and `dlc build` goes to the build tree,
# never to the user's ~/.cache; tests of the cache itself set their own.
config.environment["XDG_CACHE_HOME"] = os.path.join(config.test_exec_root,
                                                    "cache-home")
for name in ["ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS", "DELTA_STDLIB_PATH"]:
    if name in os.environ:
        config.environment[name] = os.environ[name]

# GPU code generation tests check PTX with ptxas when the CUDA toolkit is
# there; they say `REQUIRES: cuda` and are skipped elsewhere.
if os.path.exists("/usr/local/cuda/bin/ptxas") or shutil.which("ptxas"):
    config.available_features.add("cuda")
# lang-tests/cuda/: `ptxas` validates generated PTX offline (%ptxas);
# `cuda-device` (a GPU and its driver, libcuda.so.1) runs kernels.
ptxas = "/usr/local/cuda/bin/ptxas"
if not os.path.exists(ptxas):
    ptxas = shutil.which("ptxas")
if ptxas:
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))


def has_cuda_device():
    import ctypes
    try:
        driver = ctypes.CDLL("libcuda.so.1")
        count = ctypes.c_int(0)
        return (driver.cuInit(0) == 0
                and driver.cuDeviceGetCount(ctypes.byref(count)) == 0
                and count.value > 0)
    except OSError:
        return False


if has_cuda_device():
    config.available_features.add("cuda-device")
if config.delta_sanitize.upper() in ("ON", "1", "TRUE", "YES"):
    config.available_features.add("asan")
# lang-tests/distributed/: `%mpi_compare FILE` runs a sharded program under
# mpirun with 1, 2 and 3 processes against one process (utils/
# mpi_compare.py). Needs MPI found at configure time; not in sanitizer
# builds, whose leak checker reports MPI's own allocations.
elif config.delta_mpirun and not config.delta_mpirun.endswith("NOTFOUND"):
    config.available_features.add("mpi")
config.substitutions.append(
    ("%mpi_compare",
     f"{python} {os.path.join(utils, 'mpi_compare.py')} "
     f"{config.delta_mpirun} {config.dlc_path}"))
# `%mpirun -np P cmd…` runs cmd under mpirun with a timeout (utils/
# mpi_run.py); `%mpi_flags` compiles and links a C program with MPI.
config.substitutions.append(
    ("%mpirun",
     f"{python} {os.path.join(utils, 'mpi_run.py')} {config.delta_mpirun}"))
config.substitutions.append(
    ("%mpi_flags",
     " ".join([f"-I{d}" for d in config.delta_mpi_include.split(";") if d] +
              [lib for lib in config.delta_mpi_libraries.split(";") if lib])))
# vm.overcommit_memory = 1: the kernel grants any allocation, so a request
# far beyond memory succeeds and the OOM killer ends the process later.
def always_overcommits():
    try:
        with open("/proc/sys/vm/overcommit_memory") as f:
            return f.read().strip() == "1"
    except OSError:
        return False
if always_overcommits():
    config.available_features.add("overcommit")
