# Makefile for schedlock (PGXS)
#
# Build and install:    make && make install
# Run everything:       bash test/run-all.sh   (what CI runs; see README.md)
#
# "make installcheck" (after make install; as a user other than root) runs
# the test suites a PostgreSQL extension has, each on servers of its own:
# the pg_regress suite (sql/, expected/) on a temporary server started in
# tmp_check/ with schedlock preloaded, the isolation specs
# (test/isolation) on one in tmp_check_iso/, and the Perl TAP tests
# (test/t, test/security), which start their own.  REGRESS_PRELOAD=
# schedlock,pg_cron preloads pg_cron too.  "make installcheck
# EXISTING_SERVER=1" runs the first two on the server PGHOST and PGPORT
# name instead, which must preload schedlock.  ISOLATION= or TAP_TESTS=
# (empty) leaves a suite out; PROVE_TESTS=test/t/006_upgrade.pl runs one
# TAP file.  test/run-all.sh runs these and the project's other layers.
# "make dist" writes schedlock-VERSION.zip (for PGXN) of the committed tree,
# without the project's own test machinery (.gitattributes export-ignore).

EXTENSION = schedlock
MODULE_big = schedlock
# src/schedlock.c is the module's entry; src/lock, src/cron and src/sched
# are its three parts, src/base what they share
SUBDIRS = base lock cron sched sched/store
OBJS = $(patsubst %.c,%.o,$(sort $(wildcard src/*.c $(foreach d,$(SUBDIRS),src/$(d)/*.c))))
DATA = $(wildcard sql/schedlock--*.sql)
PGFILEDESC = "schedlock - scheduler locks and job scheduling"

# Every sql/*.sql that is not an install/upgrade script is a regression test.
REGRESS = $(sort $(basename $(notdir $(filter-out sql/schedlock--%,$(wildcard sql/*.sql)))))
REGRESS_OPTS = --load-extension=schedlock
REGRESS_PRELOAD ?= schedlock
ifndef EXISTING_SERVER
REGRESS_OPTS += --temp-instance=./tmp_check --temp-config=./tmp_check.conf
REGRESS_PREP = tmp_check.conf
endif
EXTRA_CLEAN = tmp_check.conf tmp_isolation output_iso tmp_check_iso

# The isolation specs, run from tmp_isolation/: a spec may name a statement
# of the C source as @NAME@ (a macro of src/sched/claim_sql.h), which
# test/isolation/fill-specs.sh replaces with the compiled text.
ISOLATION = $(sort $(basename $(notdir $(wildcard test/isolation/specs/*.spec))))
ISOLATION_OPTS = --inputdir=./tmp_isolation --load-extension=schedlock
ifndef EXISTING_SERVER
ISOLATION_OPTS += --temp-instance=./tmp_check_iso --temp-config=./tmp_check.conf
endif
REGRESS_PREP += tmp_isolation

# The Perl TAP tests: each starts the servers it needs (the files and
# flags are set after PGXS, which sets its own).
TAP_TESTS = 1

PG_CPPFLAGS = -I$(srcdir)/src
PG_CFLAGS = -Wall -Wmissing-prototypes -Wpointer-arith -Werror=vla

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

PROVE_TESTS ?= test/t/*.pl test/security/*.pl
PROVE_FLAGS += -I $(srcdir)/test/t

# PGXS tracks no header dependencies unless PostgreSQL was configured with
# --enable-depend: rebuild every object when a header of ours changes, so
# that no object keeps an old layout of a shared struct.
$(OBJS): $(wildcard $(srcdir)/src/*.h $(foreach d,$(SUBDIRS),$(srcdir)/src/$(d)/*.h))

# The release's version as PGXN wants it: default_version of the control
# file as a semantic version (1.1 -> 1.1.0); test/t/007_release_files.pl
# checks that META.json says the same.
EXTVERSION = $(shell sed -n "s/^default_version = '\\([0-9.]*\\)'/\\1/p" $(srcdir)/schedlock.control | awk -F. '{ printf "%s.%s.%s", $$1, $$2, ($$3 == "" ? 0 : $$3) }')

# a zip of HEAD with every file under schedlock-VERSION/ (uncommitted
# changes are not in it)
.PHONY: dist
dist:
	git archive --format=zip --prefix=schedlock-$(EXTVERSION)/ --output=schedlock-$(EXTVERSION).zip HEAD
	@echo "wrote schedlock-$(EXTVERSION).zip"

# the temporary server's settings, written at each run (REGRESS_PRELOAD may
# differ from the last one)
.PHONY: tmp_check.conf
tmp_check.conf:
	echo "shared_preload_libraries = '$(REGRESS_PRELOAD)'" >$@
	echo "max_worker_processes = 16" >>$@

.PHONY: tmp_isolation
tmp_isolation:
	rm -rf $@
	mkdir -p $@/specs
	cp $(srcdir)/test/isolation/specs/*.spec $@/specs/
	cp -R $(srcdir)/test/isolation/expected $@/
	bash $(srcdir)/test/isolation/fill-specs.sh $(srcdir) $@/specs
