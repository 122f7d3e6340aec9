# Makefile for schedlock (PGXS)
#
# Build and install:    make && make install
# Run everything:       bash test/run-all.sh   (what CI runs; see README.md)
#
# "make installcheck" runs the pg_regress suite against a server you started
# yourself with shared_preload_libraries = 'schedlock'.

EXTENSION = schedlock
MODULE_big = schedlock
OBJS = $(patsubst %.c,%.o,$(sort $(wildcard src/*.c)))
DATA = $(wildcard sql/schedlock--*.sql)
PGFILEDESC = "schedlock - scheduler locks and job scheduling"

# Every sql/*.sql that is not an install/upgrade script is a regression test.
REGRESS = $(sort $(basename $(notdir $(filter-out sql/schedlock--%,$(wildcard sql/*.sql)))))
REGRESS_OPTS = --load-extension=schedlock

PG_CPPFLAGS = -I$(srcdir)/src
PG_CFLAGS = -Wall -Wmissing-prototypes -Wpointer-arith -Werror=vla

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)
