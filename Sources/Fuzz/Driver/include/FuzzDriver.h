#include <stddef.h>
#include <stdint.h>

/// libFuzzer's driver (in the toolchain's libclang_rt.fuzzer, linked by -sanitize=fuzzer): runs
/// the fuzzing loop with `callback` as the target. Called from a harness's own main, because
/// SwiftPM names an executable's entry point itself and libFuzzer's main cannot stand in for it.
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));
