#ifndef PC_LITERT_H
#define PC_LITERT_H
/*
 * CLiteRT: runs a float32 .tflite model on the CPU (XNNPACK) through LiteRT's
 * C API, with libLiteRt.so loaded at run time (dlopen), so nothing links
 * against LiteRT at build time and a missing library is a run-time error.
 * Every name is prefixed `pc_litert_`.
 *
 * Tested with libLiteRt.so from the PyPI wheel ai-edge-litert 2.3.0 (x86_64).
 *
 * Threading: a model may be used from one thread at a time. Different models
 * may run on different threads. pc_litert_load_library is thread-safe.
 * Strings and pointers returned by a model are owned by it (borrowed), valid
 * until pc_litert_model_close.
 */
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Largest tensor rank LiteRT represents; enough for `dims` arrays. */
#define PC_LITERT_MAX_RANK 8

typedef struct pc_litert_model pc_litert_model;

/* why: LiteRT is an optional run-time dependency, so it is dlopen'ed (RTLD_NOW|RTLD_LOCAL)
 * once per process, never linked. 0 ok (later calls: 0, path ignored); -1 + path and dlerror(). */
int pc_litert_load_library(const char *library_path, char *error, size_t error_size);

/* why: one call takes a .tflite to a runnable CPU (XNNPACK) model with `threads` threads
 * (<= 0: LiteRT default, which is 1) and host buffers for every tensor; all must be float32.
 * NULL + message naming the file and the failing call with its status code. */
pc_litert_model *pc_litert_model_open(const char *model_path, int threads, char *error,
                                      size_t error_size);

/* why: tensor counts of the model's first signature (the order run uses). */
int pc_litert_model_input_count(const pc_litert_model *m);
int pc_litert_model_output_count(const pc_litert_model *m);

/* why: the caller sizes its images from the model. Returns the rank, writes up to max_dims
 * dims; -1 for a bad index. */
int pc_litert_model_input_shape(const pc_litert_model *m, int index, int32_t *dims, int max_dims);
int pc_litert_model_output_shape(const pc_litert_model *m, int index, int32_t *dims, int max_dims);

/* why: outputs are told apart by name (face detection: "regressors", "classificators").
 * Borrowed until close; NULL for a bad index. */
const char *pc_litert_model_input_name(const pc_litert_model *m, int index);
const char *pc_litert_model_output_name(const pc_litert_model *m, int index);

/* why: zero-copy input: 64-byte aligned float32 host memory, product(dims) elements, that the
 * caller fills before each run; valid until close. NULL for a bad index. */
float *pc_litert_model_input(pc_litert_model *m, int index);

/* why: zero-copy output: host memory holding output `index` after a successful run; valid
 * until the next run or close. NULL for a bad index. */
const float *pc_litert_model_output(const pc_litert_model *m, int index);

/* why: one synchronous inference on the calling thread. 0 ok; -1 + message with status. */
int pc_litert_model_run(pc_litert_model *m, char *error, size_t error_size);

/* why: frees everything open created (buffers, compiled model, options, model, env); NULL ok. */
void pc_litert_model_close(pc_litert_model *m);

#ifdef __cplusplus
}
#endif

#endif /* PC_LITERT_H */
