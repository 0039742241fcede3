/*
 * jni.h - the jni census layer's ids (jni.bpf.c; mirrored by jvmos/enginelayers/jni.py).
 */
#ifndef JVMOS_JNI_H
#define JVMOS_JNI_H

#include "jvmos.h"

/* stats: category (@calls[pid, "jni_call", probe]) */
#define JVMOS_CAT_JNI_CALL		(JVMOS_BASE_JNI + 1)

#endif
