/* CLiteRT: see include/pc_litert.h for what each public function is for. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* posix_memalign, RTLD_* on glibc */
#endif
#include "pc_litert.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- The LiteRT C API, declared here ----------------------------------------
 * The wheel ships no headers, so these are our own declarations of the few
 * entry points we call, checked against libLiteRt.so 2.3.0 (x86_64). Handles
 * are opaque pointers; statuses are ints (0 = ok). */

typedef int lrt_status;
typedef void *lrt_handle;

/* A ranked tensor type as LiteRT copies it out (72 bytes): element type, then
 * a layout whose first word packs rank (low 7 bits) and has_strides (bit 7),
 * then 8 dims and 8 strides. The word is read with a mask rather than declared
 * as a C bitfield so the layout does not depend on bitfield rules. */
typedef struct {
    int32_t element_type;
    uint32_t rank_and_flags;
    int32_t dims[PC_LITERT_MAX_RANK];
    uint32_t strides[PC_LITERT_MAX_RANK];
} pc_litert_tensor_type;
_Static_assert(sizeof(pc_litert_tensor_type) == 72, "LiteRtRankedTensorType is 72 bytes");

/* An environment option: a tag and a LiteRtAny (type tag + 8-byte union). */
typedef struct {
    int32_t tag;
    struct {
        int32_t type;
        int64_t int_value;
    } value;
} pc_litert_env_option;
_Static_assert(sizeof(pc_litert_env_option) == 24, "LiteRtEnvOption is 24 bytes");

enum {
    PC_LRT_ENV_AUTO_REGISTER_ACCELERATORS = 24, /* kLiteRtEnvOptionTagAutoRegisterAccelerators */
    PC_LRT_ENV_MIN_LOGGER_SEVERITY = 25,        /* kLiteRtEnvOptionTagMinLoggerSeverity */
    PC_LRT_ANY_INT = 2,                         /* kLiteRtAnyTypeInt */
    PC_LRT_LOG_WARNING = 2,                     /* kLiteRtLogSeverityWarning */
    PC_LRT_ELEMENT_FLOAT32 = 1,                 /* kLiteRtElementTypeFloat32 */
    PC_LRT_ACCEL_CPU = 1,                       /* kLiteRtHwAcceleratorCpu */
    PC_LRT_LOCK_READ = 0,                       /* kLiteRtTensorBufferLockModeRead */
    PC_LRT_HOST_ALIGNMENT = 64,                 /* LITERT_HOST_MEMORY_BUFFER_ALIGNMENT */
};

static struct {
    lrt_status (*create_environment)(int, const void *, lrt_handle *);
    void (*destroy_environment)(lrt_handle);
    lrt_status (*create_model_from_file)(lrt_handle env, const char *, lrt_handle *);
    void (*destroy_model)(lrt_handle);
    lrt_status (*get_model_signature)(lrt_handle model, size_t, lrt_handle *);
    lrt_status (*get_num_signature_inputs)(lrt_handle sig, size_t *);
    lrt_status (*get_num_signature_outputs)(lrt_handle sig, size_t *);
    lrt_status (*get_signature_input_name)(lrt_handle sig, size_t, const char **);
    lrt_status (*get_signature_output_name)(lrt_handle sig, size_t, const char **);
    lrt_status (*get_signature_input_tensor)(lrt_handle sig, size_t, lrt_handle *);
    lrt_status (*get_signature_output_tensor)(lrt_handle sig, size_t, lrt_handle *);
    lrt_status (*get_ranked_tensor_type)(lrt_handle tensor, pc_litert_tensor_type *);
    lrt_status (*create_options)(lrt_handle *);
    void (*destroy_options)(lrt_handle);
    lrt_status (*set_options_accelerators)(lrt_handle options, int);
    lrt_status (*create_opaque_options)(const char *id, void *payload, void (*)(void *),
                                        lrt_handle *);
    void (*destroy_opaque_options)(lrt_handle);
    lrt_status (*add_opaque_options)(lrt_handle options, lrt_handle opaque);
    lrt_status (*create_compiled_model)(lrt_handle env, lrt_handle model, lrt_handle options,
                                        lrt_handle *);
    void (*destroy_compiled_model)(lrt_handle);
    lrt_status (*get_input_requirements)(lrt_handle cm, size_t sig, size_t, lrt_handle *);
    lrt_status (*get_output_requirements)(lrt_handle cm, size_t sig, size_t, lrt_handle *);
    lrt_status (*get_requirements_size)(lrt_handle req, size_t *);
    lrt_status (*get_requirements_alignment)(lrt_handle req, size_t *);
    lrt_status (*create_buffer_from_host)(const pc_litert_tensor_type *, void *, size_t,
                                          void (*)(void *), lrt_handle *);
    void (*destroy_buffer)(lrt_handle);
    lrt_status (*lock_buffer)(lrt_handle buf, void **, int mode);
    lrt_status (*unlock_buffer)(lrt_handle buf);
    lrt_status (*run)(lrt_handle cm, size_t sig, size_t, lrt_handle *, size_t, lrt_handle *);
} lrt;

/* Symbol names, in the order of the fields of `lrt` (all are pointer-sized). */
static const char *const pc_litert_symbols[] = {
    "LiteRtCreateEnvironment", "LiteRtDestroyEnvironment",
    "LiteRtCreateModelFromFile", "LiteRtDestroyModel",
    "LiteRtGetModelSignature",
    "LiteRtGetNumSignatureInputs", "LiteRtGetNumSignatureOutputs",
    "LiteRtGetSignatureInputName", "LiteRtGetSignatureOutputName",
    "LiteRtGetSignatureInputTensorByIndex", "LiteRtGetSignatureOutputTensorByIndex",
    "LiteRtGetRankedTensorType",
    "LiteRtCreateOptions", "LiteRtDestroyOptions", "LiteRtSetOptionsHardwareAccelerators",
    "LiteRtCreateOpaqueOptions", "LiteRtDestroyOpaqueOptions", "LiteRtAddOpaqueOptions",
    "LiteRtCreateCompiledModel", "LiteRtDestroyCompiledModel",
    "LiteRtGetCompiledModelInputBufferRequirements",
    "LiteRtGetCompiledModelOutputBufferRequirements",
    "LiteRtGetTensorBufferRequirementsBufferSize", "LiteRtGetTensorBufferRequirementsAlignment",
    "LiteRtCreateTensorBufferFromHostMemory", "LiteRtDestroyTensorBuffer",
    "LiteRtLockTensorBuffer", "LiteRtUnlockTensorBuffer",
    "LiteRtRunCompiledModel",
};
_Static_assert(sizeof(pc_litert_symbols) / sizeof(pc_litert_symbols[0]) ==
                   sizeof(lrt) / sizeof(void (*)(void)),
               "one symbol name per function pointer");

/* --- The model --------------------------------------------------------------- */

typedef struct {
    pc_litert_tensor_type type; /* as the model declares it; passed back to LiteRT */
    const char *name;           /* borrowed from the model */
    float *host;                /* our aligned allocation, bound to `buffer` */
    lrt_handle buffer;
} pc_litert_tensor;

struct pc_litert_model {
    lrt_handle env, model, options, compiled;
    int n_in, n_out;
    pc_litert_tensor *in, *out;
    lrt_handle *in_buffers, *out_buffers; /* the `buffer` fields, as arrays for run */
};

/* why: every failure path writes one formatted line into the caller's buffer. */
__attribute__((format(printf, 3, 4)))
static void pc_litert_fail(char *error, size_t error_size, const char *fmt, ...) {
    if (!error || error_size == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(error, error_size, fmt, ap);
    va_end(ap);
}

/* why: libLiteRt.so does not export LiteRtGetStatusString; names for the codes
 * we can meet make messages readable. */
static const char *pc_litert_status_name(lrt_status s) {
    switch (s) {
    case 1: return "InvalidArgument";
    case 2: return "MemoryAllocationFailure";
    case 3: return "RuntimeFailure";
    case 4: return "MissingInputTensor";
    case 5: return "Unsupported";
    case 6: return "NotFound";
    case 9: return "Unknown";
    case 500: return "FileIO";
    case 501: return "InvalidFlatbuffer";
    case 502: return "DynamicLoading";
    case 504: return "Compilation";
    case 1000: return "IndexOOB";
    case 1001: return "InvalidIrType";
    default: return "?";
    }
}

static pthread_mutex_t pc_litert_load_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_bool pc_litert_loaded;

int pc_litert_load_library(const char *library_path, char *error, size_t error_size) {
    pthread_mutex_lock(&pc_litert_load_lock);
    int rc = 0;
    if (!atomic_load(&pc_litert_loaded)) {
        void *lib = dlopen(library_path, RTLD_NOW | RTLD_LOCAL);
        if (!lib) {
            const char *why = dlerror();
            pc_litert_fail(error, error_size, "dlopen(%s) failed: %s",
                           library_path ? library_path : "(null)", why ? why : "?");
            rc = -1;
        } else {
            void (**slot)(void) = (void (**)(void))&lrt;
            for (size_t i = 0; i < sizeof(pc_litert_symbols) / sizeof(pc_litert_symbols[0]); i++) {
                void *sym = dlsym(lib, pc_litert_symbols[i]);
                if (!sym) {
                    const char *why = dlerror();
                    pc_litert_fail(error, error_size, "dlsym(%s) in %s failed: %s",
                                   pc_litert_symbols[i], library_path, why ? why : "?");
                    memset(&lrt, 0, sizeof lrt);
                    dlclose(lib);
                    rc = -1;
                    break;
                }
                memcpy(&slot[i], &sym, sizeof sym);
            }
            /* Kept open for the life of the process on success. */
            atomic_store(&pc_litert_loaded, rc == 0);
        }
    }
    pthread_mutex_unlock(&pc_litert_load_lock);
    return rc;
}

/* why: the CPU thread count is not a LiteRtOptions field; it travels as an
 * opaque option with identifier "xnnpack" whose payload is a TOML string
 * ("num_threads = N"), normally built by client-side helpers the wheel lacks. */
static lrt_status pc_litert_add_cpu_threads(lrt_handle options, int threads) {
    char *payload = malloc(32);
    if (!payload) return 2;
    snprintf(payload, 32, "num_threads = %d\n", threads);
    lrt_handle opaque = NULL;
    lrt_status s = lrt.create_opaque_options("xnnpack", payload, free, &opaque);
    if (s != 0) {
        free(payload);
        return s;
    }
    s = lrt.add_opaque_options(options, opaque); /* on success `options` owns it */
    if (s != 0) lrt.destroy_opaque_options(opaque);
    return s;
}

/* why: inputs and outputs are set up the same way: read the declared type,
 * insist on static float32, then bind our own aligned host memory to a
 * LiteRT tensor buffer sized by the compiled model's requirements. */
static int pc_litert_setup_tensor(pc_litert_model *m, lrt_handle sig, bool is_input, int i,
                                  const char *path, char *error, size_t error_size) {
    pc_litert_tensor *t = is_input ? &m->in[i] : &m->out[i];
    const char *kind = is_input ? "input" : "output";
    lrt_handle tensor = NULL, req = NULL;
    lrt_status s;
    const char *call;

    call = is_input ? "LiteRtGetSignatureInputName" : "LiteRtGetSignatureOutputName";
    s = is_input ? lrt.get_signature_input_name(sig, (size_t)i, &t->name)
                 : lrt.get_signature_output_name(sig, (size_t)i, &t->name);
    if (s != 0) goto fail;
    call = is_input ? "LiteRtGetSignatureInputTensorByIndex"
                    : "LiteRtGetSignatureOutputTensorByIndex";
    s = is_input ? lrt.get_signature_input_tensor(sig, (size_t)i, &tensor)
                 : lrt.get_signature_output_tensor(sig, (size_t)i, &tensor);
    if (s != 0) goto fail;
    call = "LiteRtGetRankedTensorType";
    if ((s = lrt.get_ranked_tensor_type(tensor, &t->type)) != 0) goto fail;

    int rank = (int)(t->type.rank_and_flags & 0x7f);
    if (t->type.element_type != PC_LRT_ELEMENT_FLOAT32 || rank > PC_LITERT_MAX_RANK) {
        pc_litert_fail(error, error_size,
                       "%s: %s %d '%s' is not a float32 tensor (element type %d, rank %d)",
                       path, kind, i, t->name, (int)t->type.element_type, rank);
        return -1;
    }
    size_t count = 1;
    for (int d = 0; d < rank; d++) {
        if (t->type.dims[d] <= 0) {
            pc_litert_fail(error, error_size, "%s: %s %d '%s' has a dynamic dimension %d",
                           path, kind, i, t->name, (int)t->type.dims[d]);
            return -1;
        }
        count *= (size_t)t->type.dims[d];
    }

    call = is_input ? "LiteRtGetCompiledModelInputBufferRequirements"
                    : "LiteRtGetCompiledModelOutputBufferRequirements";
    s = is_input ? lrt.get_input_requirements(m->compiled, 0, (size_t)i, &req)
                 : lrt.get_output_requirements(m->compiled, 0, (size_t)i, &req);
    if (s != 0) goto fail; /* `req` is owned by the compiled model */
    size_t size = 0, align = 0;
    call = "LiteRtGetTensorBufferRequirementsBufferSize";
    if ((s = lrt.get_requirements_size(req, &size)) != 0) goto fail;
    call = "LiteRtGetTensorBufferRequirementsAlignment";
    if ((s = lrt.get_requirements_alignment(req, &align)) != 0) goto fail;
    if (size < count * sizeof(float)) size = count * sizeof(float);
    if (align < PC_LRT_HOST_ALIGNMENT) align = PC_LRT_HOST_ALIGNMENT;
    size = (size + align - 1) / align * align;

    void *host = NULL;
    if (posix_memalign(&host, align, size) != 0) {
        pc_litert_fail(error, error_size, "%s: out of memory for %s %d (%zu bytes)", path, kind,
                       i, size);
        return -1;
    }
    memset(host, 0, size);
    t->host = host;
    call = "LiteRtCreateTensorBufferFromHostMemory";
    if ((s = lrt.create_buffer_from_host(&t->type, host, size, NULL, &t->buffer)) != 0) goto fail;
    (is_input ? m->in_buffers : m->out_buffers)[i] = t->buffer;
    return 0;

fail:
    pc_litert_fail(error, error_size, "%s: %s for %s %d failed with status %d (%s)", path, call,
                   kind, i, s, pc_litert_status_name(s));
    return -1;
}

pc_litert_model *pc_litert_model_open(const char *model_path, int threads, char *error,
                                      size_t error_size) {
    if (!atomic_load(&pc_litert_loaded)) {
        pc_litert_fail(error, error_size, "%s: LiteRT is not loaded (call pc_litert_load_library)",
                       model_path ? model_path : "(null)");
        return NULL;
    }
    if (!model_path) {
        pc_litert_fail(error, error_size, "model path is NULL");
        return NULL;
    }
    pc_litert_model *m = calloc(1, sizeof *m);
    if (!m) {
        pc_litert_fail(error, error_size, "%s: out of memory", model_path);
        return NULL;
    }
    lrt_handle sig = NULL;
    size_t n_in = 0, n_out = 0;
    lrt_status s;
    const char *call;

    /* CPU only: by default every environment also tries to dlopen NPU and
     * four GPU accelerator libraries, and logs each attempt at INFO. */
    const pc_litert_env_option env_options[] = {
        {PC_LRT_ENV_AUTO_REGISTER_ACCELERATORS, {PC_LRT_ANY_INT, PC_LRT_ACCEL_CPU}},
        {PC_LRT_ENV_MIN_LOGGER_SEVERITY, {PC_LRT_ANY_INT, PC_LRT_LOG_WARNING}},
    };
    call = "LiteRtCreateEnvironment";
    if ((s = lrt.create_environment(2, env_options, &m->env)) != 0) goto fail;
    call = "LiteRtCreateModelFromFile";
    if ((s = lrt.create_model_from_file(m->env, model_path, &m->model)) != 0) goto fail;
    call = "LiteRtGetModelSignature";
    if ((s = lrt.get_model_signature(m->model, 0, &sig)) != 0) goto fail;
    call = "LiteRtGetNumSignatureInputs";
    if ((s = lrt.get_num_signature_inputs(sig, &n_in)) != 0) goto fail;
    call = "LiteRtGetNumSignatureOutputs";
    if ((s = lrt.get_num_signature_outputs(sig, &n_out)) != 0) goto fail;

    call = "LiteRtCreateOptions";
    if ((s = lrt.create_options(&m->options)) != 0) goto fail;
    call = "LiteRtSetOptionsHardwareAccelerators";
    if ((s = lrt.set_options_accelerators(m->options, PC_LRT_ACCEL_CPU)) != 0) goto fail;
    if (threads > 0) {
        call = "LiteRtAddOpaqueOptions(xnnpack num_threads)";
        if ((s = pc_litert_add_cpu_threads(m->options, threads)) != 0) goto fail;
    }
    call = "LiteRtCreateCompiledModel";
    if ((s = lrt.create_compiled_model(m->env, m->model, m->options, &m->compiled)) != 0) goto fail;

    m->n_in = (int)n_in;
    m->n_out = (int)n_out;
    m->in = calloc(n_in ? n_in : 1, sizeof *m->in);
    m->out = calloc(n_out ? n_out : 1, sizeof *m->out);
    m->in_buffers = calloc(n_in ? n_in : 1, sizeof *m->in_buffers);
    m->out_buffers = calloc(n_out ? n_out : 1, sizeof *m->out_buffers);
    if (!m->in || !m->out || !m->in_buffers || !m->out_buffers) {
        pc_litert_fail(error, error_size, "%s: out of memory", model_path);
        pc_litert_model_close(m);
        return NULL;
    }
    for (int i = 0; i < m->n_in; i++)
        if (pc_litert_setup_tensor(m, sig, true, i, model_path, error, error_size) != 0) {
            pc_litert_model_close(m);
            return NULL;
        }
    for (int i = 0; i < m->n_out; i++)
        if (pc_litert_setup_tensor(m, sig, false, i, model_path, error, error_size) != 0) {
            pc_litert_model_close(m);
            return NULL;
        }
    return m;

fail:
    pc_litert_fail(error, error_size, "%s: %s failed with status %d (%s)", model_path, call, s,
                   pc_litert_status_name(s));
    pc_litert_model_close(m);
    return NULL;
}

int pc_litert_model_input_count(const pc_litert_model *m) { return m ? m->n_in : 0; }
int pc_litert_model_output_count(const pc_litert_model *m) { return m ? m->n_out : 0; }

/* why: the shape accessors share bounds checks and the rank decoding. */
static int pc_litert_shape(const pc_litert_tensor *ts, int n, int index, int32_t *dims,
                           int max_dims) {
    if (!ts || index < 0 || index >= n) return -1;
    int rank = (int)(ts[index].type.rank_and_flags & 0x7f);
    for (int d = 0; d < rank && d < max_dims && dims; d++) dims[d] = ts[index].type.dims[d];
    return rank;
}

int pc_litert_model_input_shape(const pc_litert_model *m, int index, int32_t *dims, int max_dims) {
    return m ? pc_litert_shape(m->in, m->n_in, index, dims, max_dims) : -1;
}

int pc_litert_model_output_shape(const pc_litert_model *m, int index, int32_t *dims,
                                 int max_dims) {
    return m ? pc_litert_shape(m->out, m->n_out, index, dims, max_dims) : -1;
}

const char *pc_litert_model_input_name(const pc_litert_model *m, int index) {
    return (m && index >= 0 && index < m->n_in) ? m->in[index].name : NULL;
}

const char *pc_litert_model_output_name(const pc_litert_model *m, int index) {
    return (m && index >= 0 && index < m->n_out) ? m->out[index].name : NULL;
}

float *pc_litert_model_input(pc_litert_model *m, int index) {
    return (m && index >= 0 && index < m->n_in) ? m->in[index].host : NULL;
}

const float *pc_litert_model_output(const pc_litert_model *m, int index) {
    return (m && index >= 0 && index < m->n_out) ? m->out[index].host : NULL;
}

int pc_litert_model_run(pc_litert_model *m, char *error, size_t error_size) {
    if (!m) {
        pc_litert_fail(error, error_size, "model is NULL");
        return -1;
    }
    lrt_status s = lrt.run(m->compiled, 0, (size_t)m->n_in, m->in_buffers, (size_t)m->n_out,
                           m->out_buffers);
    if (s != 0) {
        pc_litert_fail(error, error_size, "LiteRtRunCompiledModel failed with status %d (%s)", s,
                       pc_litert_status_name(s));
        return -1;
    }
    /* A read lock is LiteRT's "results are ready" point; for host memory it
     * hands back our own pointer, but copy if it ever does not. */
    for (int i = 0; i < m->n_out; i++) {
        void *p = NULL;
        if ((s = lrt.lock_buffer(m->out[i].buffer, &p, PC_LRT_LOCK_READ)) != 0) {
            pc_litert_fail(error, error_size,
                           "LiteRtLockTensorBuffer for output %d failed with status %d (%s)", i, s,
                           pc_litert_status_name(s));
            return -1;
        }
        if (p && p != m->out[i].host) {
            size_t count = 1;
            int rank = (int)(m->out[i].type.rank_and_flags & 0x7f);
            for (int d = 0; d < rank; d++) count *= (size_t)m->out[i].type.dims[d];
            memcpy(m->out[i].host, p, count * sizeof(float));
        }
        lrt.unlock_buffer(m->out[i].buffer);
    }
    return 0;
}

void pc_litert_model_close(pc_litert_model *m) {
    if (!m) return;
    /* Buffers before the compiled model (they were made for it), our host
     * memory after both, then options, model and environment. */
    for (int i = 0; m->in && i < m->n_in; i++)
        if (m->in[i].buffer) lrt.destroy_buffer(m->in[i].buffer);
    for (int i = 0; m->out && i < m->n_out; i++)
        if (m->out[i].buffer) lrt.destroy_buffer(m->out[i].buffer);
    if (m->compiled) lrt.destroy_compiled_model(m->compiled);
    for (int i = 0; m->in && i < m->n_in; i++) free(m->in[i].host);
    for (int i = 0; m->out && i < m->n_out; i++) free(m->out[i].host);
    if (m->options) lrt.destroy_options(m->options);
    if (m->model) lrt.destroy_model(m->model);
    if (m->env) lrt.destroy_environment(m->env);
    free(m->in);
    free(m->out);
    free(m->in_buffers);
    free(m->out_buffers);
    free(m);
}
