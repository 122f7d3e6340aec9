/*-------------------------------------------------------------------------
 *
 * unit.h
 *	  The assertion counter of the plain C unit tests (test_*.c): check()
 *	  records one assertion and prints it when it fails; unit_report()
 *	  prints the summary line and gives the exit status.
 *
 * IDENTIFICATION
 *	  test/unit/unit.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDLOCK_UNIT_H
#define SCHEDLOCK_UNIT_H

#include <stdio.h>

static int	unit_tests = 0;
static int	unit_failures = 0;

/*
 * check
 *		Record one assertion.
 */
static void
check(int ok, const char *what)
{
	unit_tests++;
	if (!ok)
	{
		unit_failures++;
		printf("FAIL: %s\n", what);
	}
}

/*
 * unit_report
 *		Print "NAME: N tests, M failed"; the exit status of main: 1 when
 *		anything failed.
 */
static int
unit_report(const char *name)
{
	printf("%s: %d tests, %d failed\n", name, unit_tests, unit_failures);
	return unit_failures == 0 ? 0 : 1;
}

#endif							/* SCHEDLOCK_UNIT_H */
