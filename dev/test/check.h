// The one-line check of the model tests (dev/test/test_model.c, test_gpt.cu): prints "ok" or
// "FAIL" and the description, and counts the failures in g_failures.
#ifndef DEV_TEST_CHECK_H
#define DEV_TEST_CHECK_H

#include <stdarg.h>
#include <stdio.h>

static int g_failures = 0;

static void check(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void check(int ok, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    printf("%s ", ok ? "ok  " : "FAIL");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    fflush(stdout);
    if (!ok) g_failures++;
}

#endif
