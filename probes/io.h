/*
 * io.h - the io layer's ids (io.bpf.c; mirrored by jvmos/enginelayers/io.py).
 */
#ifndef JVMOS_IO_H
#define JVMOS_IO_H

#include "jvmos.h"

/* stats: category */
#define JVMOS_CAT_JNI_COPY		(JVMOS_BASE_IO + 1)
#define JVMOS_CAT_UNSAFE_COPY_OUT	(JVMOS_BASE_IO + 2)
#define JVMOS_CAT_UNSAFE_COPY_ETC	(JVMOS_BASE_IO + 3)
#define JVMOS_CAT_NIO_NATIVE		(JVMOS_BASE_IO + 4)
#define JVMOS_CAT_IO_SYSCALL		(JVMOS_BASE_IO + 5)

/* counts: what (sub: a JVMOS_PATH_* for the path ones, 0 for nio_confirmed) */
#define JVMOS_WHAT_PATH_BYTES		(JVMOS_BASE_IO + 1)
#define JVMOS_WHAT_PATH_CALLS		(JVMOS_BASE_IO + 2)
#define JVMOS_WHAT_NIO_CONFIRMED	(JVMOS_BASE_IO + 3)

#define JVMOS_PATH_JNI_IN		1
#define JVMOS_PATH_JNI_OUT		2
#define JVMOS_PATH_NIO_ANY		3

/* missed (sub of JVMOS_WHAT_MISSED) */
#define JVMOS_MISSED_JNI_COPY_NO_ENTRY	(JVMOS_BASE_IO + 1)
#define JVMOS_MISSED_SYSCALL_NO_ENTRY	(JVMOS_BASE_IO + 2)
#define JVMOS_MISSED_USDT_ARGS		(JVMOS_BASE_IO + 3)	/* a USDT copy's len/buf unread */

/* A USDT site's arguments (a stripped libjvm's hotspot_jni probes), as the engine writes them
 * into usdt_args[probe id] from the note's specs (jvmos/usdtargs.py): kind, size in bytes
 * (negative: sign-extended), a struct pt_regs byte offset, and a displacement (a memory
 * operand's) or the constant */
#define JVMOS_USDT_ARG_CONST		1
#define JVMOS_USDT_ARG_REG		2
#define JVMOS_USDT_ARG_MEM		3
#define JVMOS_USDT_MAX_ARGS		6

struct jvmos_usdt_arg {
	__u8 kind;
	__s8 size;
	__u16 reg;
	__u32 pad;
	__s64 disp;
};

struct jvmos_usdt_args {
	struct jvmos_usdt_arg arg[JVMOS_USDT_MAX_ARGS];
};

#endif
