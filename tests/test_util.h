/* Small helpers shared by the Check suites. */
#ifndef HC_TEST_UTIL_H
#define HC_TEST_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

/* "<dir>/<name>" in a static rotating buffer (valid for a few calls). */
const char *hc_test_path(const char *dir, const char *name);
/* Whole file into malloc'd memory (NUL-terminated); NULL on failure. */
char *hc_test_read_file(const char *path, size_t *len);
/* Parse a JSON file; NULL on failure. Free with json_object_put(). */
json_object *hc_test_load_json(const char *path);
/* Fill an int32 array from a JSON array of integers; returns its length. */
int hc_test_json_ints(json_object *arr, int32_t *out, int max);
/* A scratch directory unique to this process (created once). */
const char *hc_test_tmpdir(void);
/* Index of the largest of x[0..n) (the first, on ties): greedy decoding. */
int hc_test_argmax(const float *x, int n);
/* A case, or part of one, that cannot run here: prints one line "skipped:
 * <why>" (tools/test.sh lists every such line after each ctest run, so a
 * skip inside a passing suite is seen).  A suite that cannot run at all
 * prints the same and exits 77, which CTest reports as skipped. */
void hc_test_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The type field of tensor `name`'s info, as the bytes of the GGUF/PWRI file
 * at `path` hold it, read by a walker of its own (not core/format/gguf.c, which
 * translates PWRI ids): 0, or -1 if the file cannot be walked or has no
 * such tensor.  magic (5 bytes, may be NULL) gets the file's magic. */
int hc_test_raw_tensor_type(const char *path, const char *name, uint32_t *type, char *magic);
/* The first tensor in the GGUF/PWRI file at `path` that PowerInfer's llama
 * loader would not create (it refuses such a file), from the same walker; ""
 * if every tensor is one it knows, NULL if the file cannot be walked.
 * Static storage. */
const char *hc_test_tensor_unknown_to_powerinfer(const char *path);
/* Number of threads to use when a test wants "more than one": 2. */
#define HC_TEST_THREADS 2

#endif
