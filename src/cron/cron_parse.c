/*-------------------------------------------------------------------------
 *
 * cron_parse.c
 *	  Cron schedule parser, in plain C.
 *
 * The parser turns a schedule into bitmasks (SchedlockCronSchedule) and is
 * deliberately strict: anything it does not understand completely is
 * rejected with a message naming the field and the offending text, rather
 * than half-read the way Vixie-derived parsers do.  A range may wrap around
 * the end of its field ("22-2" hours, "fri-mon", "nov-feb"): it runs on to the
 * field's last value and on from its first.  A schedule that can never fire
 * is refused too (schedlock_cron_never_fires, cron_next.c).
 *
 * Nothing here knows about time zones or PostgreSQL; see cron_sql.c.
 *
 * IDENTIFICATION
 *	  src/cron/cron_parse.c
 *
 *-------------------------------------------------------------------------
 */
#include "cron.h"

#include <stdio.h>
#include <string.h>

/* Longest quoted excerpt of user input in a message, in bytes. */
#define CRON_QUOTE_MAX	60

/* How one of the five fields is read. */
typedef struct CronFieldSpec
{
	SchedlockCronField field;
	const char *name;			/* "minute", used in messages */
	int			min;			/* smallest accepted value */
	int			max;			/* largest accepted value */
	int			max_step;		/* largest accepted step */
	const char *const *names;	/* three-letter names, or NULL */
	int			name_base;		/* value of names[0] */
	const char *name_kind;		/* "month" or "day" for messages */
} CronFieldSpec;

static const char *const month_names[] = {
	"jan", "feb", "mar", "apr", "may", "jun",
	"jul", "aug", "sep", "oct", "nov", "dec", NULL
};

static const char *const weekday_names[] = {
	"sun", "mon", "tue", "wed", "thu", "fri", "sat", NULL
};

static const CronFieldSpec field_specs[5] = {
	{SCHEDLOCK_CRON_FIELD_MINUTE, "minute", 0, 59, 59, NULL, 0, NULL},
	{SCHEDLOCK_CRON_FIELD_HOUR, "hour", 0, 23, 23, NULL, 0, NULL},
	{SCHEDLOCK_CRON_FIELD_DAY_OF_MONTH, "day-of-month", 1, 31, 30, NULL, 0, NULL},
	{SCHEDLOCK_CRON_FIELD_MONTH, "month", 1, 12, 11, month_names, 1, "month"},
	{SCHEDLOCK_CRON_FIELD_DAY_OF_WEEK, "day-of-week", 0, 7, 7, weekday_names, 0, "day"},
};

static const char *const field_hints[] = {
	/* SCHEDLOCK_CRON_FIELD_SCHEDULE */
	"A schedule is five fields \"minute hour day-of-month month day-of-week\", "
	"one of @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly, @reboot, "
	"or \"N seconds\" with N from 1 to 59.",
	/* SCHEDLOCK_CRON_FIELD_MINUTE */
	"The minute field accepts *, N, N-M, */S and N-M/S with N and M from 0 to 59 "
	"and S from 1 to 59, or a comma-separated list of these.",
	/* SCHEDLOCK_CRON_FIELD_HOUR */
	"The hour field accepts *, N, N-M, */S and N-M/S with N and M from 0 to 23 "
	"and S from 1 to 23, or a comma-separated list of these.",
	/* SCHEDLOCK_CRON_FIELD_DAY_OF_MONTH */
	"The day-of-month field accepts *, N, N-M, */S and N-M/S with N and M from 1 to 31 "
	"and S from 1 to 30, a comma-separated list of these, or $ alone for the last day of the month.",
	/* SCHEDLOCK_CRON_FIELD_MONTH */
	"The month field accepts *, N, N-M, */S and N-M/S with N and M from 1 to 12 "
	"or jan to dec and S from 1 to 11, or a comma-separated list of these.",
	/* SCHEDLOCK_CRON_FIELD_DAY_OF_WEEK */
	"The day-of-week field accepts *, N, N-M, */S and N-M/S with N and M from 0 to 7 "
	"(0 and 7 are Sunday) or sun to sat and S from 1 to 7, or a comma-separated list of these.",
	/* SCHEDLOCK_CRON_FIELD_KEYWORD */
	"The keywords are @yearly, @annually, @monthly, @weekly, @daily, @midnight, "
	"@hourly and @reboot.",
	/* SCHEDLOCK_CRON_FIELD_INTERVAL */
	"The interval form is \"N seconds\" (or \"N second\") with N from 1 to 59."
};

/* A piece of the input: start and length, not NUL-terminated. */
typedef struct CronSpan
{
	const char *p;
	size_t		len;
} CronSpan;

static bool parse_schedule(const char *spec, SchedlockCronDialect dialect,
						   SchedlockCronSchedule *out, SchedlockCronError *err);

/*
 * schedlock_cron_field_hint
 *		The errhint text listing what a field accepts.
 */
const char *
schedlock_cron_field_hint(SchedlockCronField field)
{
	if ((int) field < 0 ||
		(size_t) field >= sizeof(field_hints) / sizeof(field_hints[0]))
		field = SCHEDLOCK_CRON_FIELD_SCHEDULE;
	return field_hints[field];
}

/*
 * is_blank
 *		Whitespace that separates fields (ASCII only).
 */
static bool
is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' ||
		c == '\v' || c == '\f';
}

/*
 * is_digit / is_alpha / to_lower
 *		Locale-independent ASCII character classes.
 */
static bool
is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool
is_alpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static char
to_lower(char c)
{
	return (c >= 'A' && c <= 'Z') ? (char) (c - 'A' + 'a') : c;
}

/*
 * span_equals_ci
 *		Whether a span equals a lower-case word, ignoring ASCII case.
 */
static bool
span_equals_ci(CronSpan s, const char *word)
{
	size_t		n = strlen(word);
	size_t		i;

	if (s.len != n)
		return false;
	for (i = 0; i < n; i++)
		if (to_lower(s.p[i]) != word[i])
			return false;
	return true;
}

/*
 * quote
 *		Copy at most CRON_QUOTE_MAX bytes of a span into buf for use inside
 *		a message, cutting only at a UTF-8 character boundary and marking a
 *		cut with "...".  buf must hold CRON_QUOTE_MAX + 4 bytes.
 */
static const char *
quote(CronSpan s, char *buf)
{
	size_t		n = s.len;
	bool		cut = false;

	if (n > CRON_QUOTE_MAX)
	{
		n = CRON_QUOTE_MAX;
		/* do not split a multibyte character */
		while (n > 0 && (((unsigned char) s.p[n]) & 0xC0) == 0x80)
			n--;
		cut = true;
	}
	memcpy(buf, s.p, n);
	if (cut)
	{
		memcpy(buf + n, "...", 3);
		n += 3;
	}
	buf[n] = '\0';
	return buf;
}

/*
 * set_error
 *		Fill *err (which may be NULL) and return false, for "return
 *		set_error(...)" at every rejection.  message and detail are
 *		printf-style pairs already formatted by the caller.
 */
static bool
set_error(SchedlockCronError *err, SchedlockCronField field,
		  const char *message, const char *detail)
{
	if (err != NULL)
	{
		err->field = field;
		snprintf(err->message, sizeof(err->message), "%s", message);
		snprintf(err->detail, sizeof(err->detail), "%s", detail);
		err->hint = schedlock_cron_field_hint(field);
	}
	return false;
}

/*
 * field_error
 *		Reject a field: the message names the field and quotes its text,
 *		the detail says what is wrong with it.
 */
static bool
field_error(SchedlockCronError *err, const CronFieldSpec *spec,
			CronSpan fieldtext, const char *detail)
{
	char		message[256];
	char		q[CRON_QUOTE_MAX + 4];

	snprintf(message, sizeof(message), "invalid %s field \"%s\" in cron schedule",
			 spec->name, quote(fieldtext, q));
	return set_error(err, spec->field, message, detail);
}

/*
 * parse_number
 *		Read a run of digits at *pp (moving *pp past it).  Values above
 *		999999 are reported as 1000000, which every range check rejects.
 *		Returns false when *pp does not start with a digit.
 */
static bool
parse_number(const char **pp, const char *end, int *value)
{
	const char *p = *pp;
	int			v = 0;

	if (p >= end || !is_digit(*p))
		return false;
	while (p < end && is_digit(*p))
	{
		if (v < 1000000)
			v = v * 10 + (*p - '0');
		p++;
	}
	if (v > 1000000)
		v = 1000000;
	*pp = p;
	*value = v;
	return true;
}

/*
 * parse_value
 *		Read one value of a field (a number, or a three-letter name when the
 *		field has names) at *pp.  On failure writes the detail to detail[]
 *		and returns false.  after_dash says the value ends a range.  Range
 *		checks are left to the caller.
 */
static bool
parse_value(const CronFieldSpec *spec, const char **pp, const char *end,
			bool after_dash, int *value, char *detail, size_t detaillen)
{
	const char *p = *pp;
	char		q[CRON_QUOTE_MAX + 4];
	CronSpan	word;
	int			i;

	if (parse_number(pp, end, value))
		return true;

	/* not a number: a name, or garbage up to the next separator */
	word.p = p;
	while (p < end && is_alpha(*p))
		p++;
	word.len = (size_t) (p - word.p);

	if (word.len == 0)
	{
		const char *stop = word.p;

		while (stop < end && *stop != ',' && *stop != '-' && *stop != '/')
			stop++;
		word.len = (size_t) (stop - word.p);
		if (word.len == 0 && after_dash)
			snprintf(detail, detaillen, "A value is missing after \"-\".");
		else if (word.len == 0 && (word.p >= end || *word.p == ','))
			snprintf(detail, detaillen, "The field has an empty list element.");
		else if (word.len == 0)
			snprintf(detail, detaillen, "A value is missing before \"%c\".", *word.p);
		else if (spec->field == SCHEDLOCK_CRON_FIELD_DAY_OF_MONTH &&
				 word.p[0] == '$')
			snprintf(detail, detaillen,
					 "\"$\" (last day of the month) must be the whole day-of-month field.");
		else
			snprintf(detail, detaillen, "\"%s\" is not a number.", quote(word, q));
		return false;
	}

	if (spec->names != NULL)
	{
		for (i = 0; spec->names[i] != NULL; i++)
		{
			if (span_equals_ci(word, spec->names[i]))
			{
				*pp = p;
				*value = spec->name_base + i;
				return true;
			}
		}
		/* a full name such as "january" or "monday": point to the short one */
		if (word.len > 3)
		{
			CronSpan	prefix = {word.p, 3};

			for (i = 0; spec->names[i] != NULL; i++)
			{
				if (span_equals_ci(prefix, spec->names[i]))
				{
					snprintf(detail, detaillen,
							 "Only three-letter %s names are accepted: write \"%s\" instead of \"%s\".",
							 spec->name_kind, spec->names[i], quote(word, q));
					return false;
				}
			}
		}
		snprintf(detail, detaillen,
				 "\"%s\" is neither a number nor a three-letter %s name.",
				 quote(word, q), spec->name_kind);
		return false;
	}

	snprintf(detail, detaillen, "\"%s\" is not a number.", quote(word, q));
	return false;
}

/*
 * set_wrapped_range
 *		Set the bits of a wrap-around range lo-hi (lo > hi): from lo up to
 *		the end of the field's cycle, then on from its start up to hi, every
 *		step-th value counted from lo across the wrap ("22-2/2" in hours is
 *		22, 0, 2).  The cycle of day-of-week is the seven days 0-6, with 7
 *		taken as Sunday (0), so "fri-mon" is Friday to Monday and "sat-sun"
 *		Saturday and Sunday.
 */
static void
set_wrapped_range(const CronFieldSpec *spec, int lo, int hi, int step,
				  uint64_t *mask)
{
	int			min = spec->min;
	int			cycle = spec->max - spec->min + 1;
	int			count;
	int			k;

	if (spec->field == SCHEDLOCK_CRON_FIELD_DAY_OF_WEEK)
	{
		cycle = 7;
		lo %= 7;
		hi %= 7;
	}
	/* values in the range, lo and hi included: 1 .. cycle */
	count = ((hi - lo) % cycle + cycle) % cycle + 1;
	for (k = 0; k < count; k += step)
		*mask |= UINT64_C(1) << (min + (lo - min + k) % cycle);
}

/*
 * set_pg_cron_wrapped_range
 *		Set the bits pg_cron sets for a wrap-around range lo-hi (lo > hi).
 *		Before 1.6 its loop "for (i = lo; i <= hi; i += step)" sets none.
 *		1.6 sets a range with step 1 as a bit string, a byte at a time
 *		(bit_nset): from lo to the end of lo's byte, and from the start of
 *		hi's byte to hi, or nothing when both share a byte; a stepped range
 *		still goes through the loop and sets none.  Bits are counted from the
 *		field's smallest value; those past the field are dropped here (they
 *		never match in pg_cron either).
 */
static void
set_pg_cron_wrapped_range(const CronFieldSpec *spec, int lo, int hi, int step,
						  SchedlockCronDialect dialect, uint64_t *mask)
{
	int			start = lo - spec->min;
	int			stop = hi - spec->min;
	int			i;

	if (dialect != SCHEDLOCK_CRON_DIALECT_PG_CRON_1_6 || step != 1 ||
		start / 8 == stop / 8)
		return;
	for (i = start; i < (start / 8 + 1) * 8; i++)
		if (spec->min + i <= spec->max)
			*mask |= UINT64_C(1) << (spec->min + i);
	for (i = (stop / 8) * 8; i <= stop; i++)
		*mask |= UINT64_C(1) << (spec->min + i);
}

/*
 * parse_field
 *		Parse one of the five fields into a bitmask (bit n = value n).
 *		Day-of-week 7 is stored as 0.  Returns false with *err filled in.
 *		dialect says how a wrap-around range is read.
 */
static bool
parse_field(const CronFieldSpec *spec, CronSpan text, uint64_t *mask,
			SchedlockCronDialect dialect, SchedlockCronError *err)
{
	const char *p = text.p;
	const char *end = text.p + text.len;
	char		detail[512];
	char		q1[CRON_QUOTE_MAX + 4];
	char		q2[CRON_QUOTE_MAX + 4];

	*mask = 0;
	for (;;)
	{
		const char *elem_start = p;
		const char *elem_end;
		const char *value_end;
		int			lo,
					hi,
					step = 1;
		bool		star = false;
		bool		range = false;
		int			v;

		/* the element runs to the next comma */
		elem_end = p;
		while (elem_end < end && *elem_end != ',')
			elem_end++;

		if (p < end && *p == '*')
		{
			star = true;
			lo = spec->min;
			hi = spec->max;
			p++;
		}
		else
		{
			if (!parse_value(spec, &p, elem_end, false, &lo, detail, sizeof(detail)))
				return field_error(err, spec, text, detail);
			hi = lo;
			if (p < elem_end && *p == '-')
			{
				p++;
				if (!parse_value(spec, &p, elem_end, true, &hi, detail, sizeof(detail)))
					return field_error(err, spec, text, detail);
				range = true;
			}
		}
		value_end = p;

		if (p < elem_end && *p == '/')
		{
			CronSpan	stepword;

			p++;
			stepword.p = p;
			if (!parse_number(&p, elem_end, &step))
			{
				stepword.len = (size_t) (elem_end - stepword.p);
				if (stepword.len == 0)
					snprintf(detail, sizeof(detail), "\"/\" must be followed by a step.");
				else
					snprintf(detail, sizeof(detail), "Step \"%s\" is not a number.",
							 quote(stepword, q1));
				return field_error(err, spec, text, detail);
			}
			if (!star && !range)
			{
				CronSpan	val = {elem_start, (size_t) (value_end - elem_start)};
				CronSpan	st = {stepword.p, (size_t) (p - stepword.p)};

				quote(val, q1);
				quote(st, q2);
				snprintf(detail, sizeof(detail),
						 "A step needs a range or \"*\" before it: write \"%s-%d/%s\" or \"*/%s\" instead of \"%s/%s\".",
						 q1, spec->max, q2, q2, q1, q2);
				return field_error(err, spec, text, detail);
			}
		}

		if (p < elem_end)
		{
			CronSpan	elem = {elem_start, (size_t) (elem_end - elem_start)};
			CronSpan	rest = {p, (size_t) (elem_end - p)};
			CronSpan	head = {elem_start, (size_t) (p - elem_start)};
			char		q3[CRON_QUOTE_MAX + 4];

			snprintf(detail, sizeof(detail),
					 "Element \"%s\" has unexpected text \"%s\" after \"%s\".",
					 quote(elem, q1), quote(rest, q2), quote(head, q3));
			return field_error(err, spec, text, detail);
		}

		/* range checks */
		if (lo < spec->min || lo > spec->max || hi < spec->min || hi > spec->max)
		{
			v = (lo < spec->min || lo > spec->max) ? lo : hi;
			if (v >= 1000000)
				snprintf(detail, sizeof(detail),
						 "A value is out of range: the %s field accepts %d to %d.",
						 spec->name, spec->min, spec->max);
			else
				snprintf(detail, sizeof(detail),
						 "Value %d is out of range: the %s field accepts %d to %d.",
						 v, spec->name, spec->min, spec->max);
			return field_error(err, spec, text, detail);
		}
		if (step < 1 || step > spec->max_step)
		{
			if (step >= 1000000)
				snprintf(detail, sizeof(detail),
						 "A step is out of range: steps in the %s field go from 1 to %d.",
						 spec->name, spec->max_step);
			else
				snprintf(detail, sizeof(detail),
						 "Step %d is out of range: steps in the %s field go from 1 to %d.",
						 step, spec->name, spec->max_step);
			return field_error(err, spec, text, detail);
		}

		if (lo <= hi)
		{
			for (v = lo; v <= hi; v += step)
				*mask |= UINT64_C(1) << v;
		}
		else if (dialect == SCHEDLOCK_CRON_DIALECT_SCHEDLOCK)
			set_wrapped_range(spec, lo, hi, step, mask);
		else
			set_pg_cron_wrapped_range(spec, lo, hi, step, dialect, mask);

		if (elem_end >= end)
			break;
		p = elem_end + 1;		/* skip the comma */
		if (p >= end)
		{
			snprintf(detail, sizeof(detail), "The field has an empty list element.");
			return field_error(err, spec, text, detail);
		}
	}

	if (spec->field == SCHEDLOCK_CRON_FIELD_DAY_OF_WEEK && (*mask & (UINT64_C(1) << 7)))
		*mask = (*mask | 1) & 0x7F;
	return true;
}

/*
 * split_fields
 *		Split text at whitespace into at most max spans; returns the number
 *		of fields found (which may exceed max; only max are stored).
 */
static int
split_fields(const char *text, CronSpan *fields, int max)
{
	const char *p = text;
	int			n = 0;

	for (;;)
	{
		const char *start;

		while (*p && is_blank(*p))
			p++;
		if (*p == '\0')
			break;
		start = p;
		while (*p && !is_blank(*p))
			p++;
		if (n < max)
		{
			fields[n].p = start;
			fields[n].len = (size_t) (p - start);
		}
		n++;
	}
	return n;
}

/*
 * parse_keyword
 *		Parse "@word" (the whole schedule) into *out.
 */
static bool
parse_keyword(CronSpan word, int nfields, CronSpan second,
			  SchedlockCronSchedule *out, SchedlockCronDialect dialect,
			  SchedlockCronError *err)
{
	char		message[256];
	char		q[CRON_QUOTE_MAX + 4];
	char		q2[CRON_QUOTE_MAX + 4];
	CronSpan	name = {word.p + 1, word.len - 1};

	if (span_equals_ci(name, "reboot") || span_equals_ci(name, "restart"))
		out->flags = SCHEDLOCK_CRON_REBOOT;
	else if (span_equals_ci(name, "yearly") || span_equals_ci(name, "annually"))
	{
		out->minutes = 1;
		out->hours = 1;
		out->days = 1u << 1;
		/* pg_cron 1.6 sets month "0" here, which is no month: never runs */
		out->months = dialect == SCHEDLOCK_CRON_DIALECT_PG_CRON_1_6 ? 0 : 1u << 1;
		out->weekdays = 0x7F;
		out->flags = SCHEDLOCK_CRON_DOW_STAR;
	}
	else if (span_equals_ci(name, "monthly"))
	{
		out->minutes = 1;
		out->hours = 1;
		out->days = 1u << 1;
		out->months = 0x1FFE;
		out->weekdays = 0x7F;
		out->flags = SCHEDLOCK_CRON_DOW_STAR;
	}
	else if (span_equals_ci(name, "weekly"))
	{
		out->minutes = 1;
		out->hours = 1;
		out->days = 0xFFFFFFFE;
		out->months = 0x1FFE;
		out->weekdays = 1;
		out->flags = SCHEDLOCK_CRON_DOM_STAR;
	}
	else if (span_equals_ci(name, "daily") || span_equals_ci(name, "midnight"))
	{
		out->minutes = 1;
		out->hours = 1;
		out->days = 0xFFFFFFFE;
		out->months = 0x1FFE;
		out->weekdays = 0x7F;
		out->flags = SCHEDLOCK_CRON_DOM_STAR | SCHEDLOCK_CRON_DOW_STAR;
	}
	else if (span_equals_ci(name, "hourly"))
	{
		out->minutes = 1;
		out->hours = 0xFFFFFF;
		out->days = 0xFFFFFFFE;
		out->months = 0x1FFE;
		out->weekdays = 0x7F;
		out->flags = SCHEDLOCK_CRON_DOM_STAR | SCHEDLOCK_CRON_DOW_STAR;
	}
	else
	{
		snprintf(message, sizeof(message), "unknown cron keyword \"%s\"", quote(word, q));
		return set_error(err, SCHEDLOCK_CRON_FIELD_KEYWORD, message,
						 "A schedule that starts with \"@\" must be one of the cron keywords.");
	}

	if (nfields > 1)
	{
		snprintf(message, sizeof(message),
				 "unexpected text \"%s\" after cron keyword \"%s\"",
				 quote(second, q), quote(word, q2));
		return set_error(err, SCHEDLOCK_CRON_FIELD_KEYWORD, message,
						 "A keyword must be the whole schedule.");
	}
	return true;
}

/*
 * looks_like_interval
 *		Whether the schedule is meant as the "N seconds" form: a number
 *		(possibly signed or malformed) followed, with or without blanks, by
 *		the word "second" or "seconds".  Sets *number to the part before the
 *		word.
 */
static bool
looks_like_interval(const char *text, CronSpan *number)
{
	const char *p = text;
	const char *end;
	const char *word_end;
	const char *word_start;

	while (*p && is_blank(*p))
		p++;
	end = p + strlen(p);
	while (end > p && is_blank(end[-1]))
		end--;
	word_end = end;
	word_start = word_end;
	while (word_start > p && is_alpha(word_start[-1]))
		word_start--;
	{
		CronSpan	word = {word_start, (size_t) (word_end - word_start)};

		if (!span_equals_ci(word, "second") && !span_equals_ci(word, "seconds"))
			return false;
	}
	number->p = p;
	end = word_start;
	while (end > p && is_blank(end[-1]))
		end--;
	number->len = (size_t) (end - p);
	/* "30 seconds" or "30seconds"; "* * * seconds" is not meant as interval */
	if (number->len == 0)
		return true;
	return is_digit(p[0]) || p[0] == '-' || p[0] == '+' || p[0] == '.';
}

/*
 * instead_of_interval
 *		Write to detail[] the sentence first, then the cron schedule that
 *		runs every n units ("minute", "hour", "day" or "week"), or, when n
 *		is 0 or has no schedule of its own, the schedules nearest to it.  A
 *		step that does not divide its field (every 7 minutes) restarts at
 *		each hour, which the sentence says.
 */
static void
instead_of_interval(char *detail, size_t len, const char *first, int n,
					const char *unit)
{
	if (strcmp(unit, "minute") == 0 && n == 1)
		snprintf(detail, len, "%s For every minute write \"* * * * *\".", first);
	else if (strcmp(unit, "minute") == 0 && n >= 2 && n <= 59)
		snprintf(detail, len,
				 "%s For every %d minutes write \"*/%d * * * *\"%s.", first,
				 n, n, 60 % n == 0 ? "" : " (it restarts at each full hour)");
	else if (strcmp(unit, "hour") == 0 && n == 1)
		snprintf(detail, len, "%s For every hour write \"0 * * * *\".", first);
	else if (strcmp(unit, "hour") == 0 && n >= 2 && n <= 23)
		snprintf(detail, len,
				 "%s For every %d hours write \"0 */%d * * *\"%s.", first,
				 n, n, 24 % n == 0 ? "" : " (it restarts at each midnight)");
	else if (strcmp(unit, "day") == 0 && n == 1)
		snprintf(detail, len, "%s For every day at midnight write \"0 0 * * *\".",
				 first);
	else if (strcmp(unit, "week") == 0 && n == 1)
		snprintf(detail, len,
				 "%s For every week (Sunday at midnight) write \"0 0 * * 0\".",
				 first);
	else
		snprintf(detail, len,
				 "%s Other intervals are written as five-field schedules: \"* * * * *\" runs every minute, \"*/5 * * * *\" every 5 minutes, \"0 */2 * * *\" every 2 hours.",
				 first);
}

/*
 * looks_like_other_interval
 *		Whether the schedule is an interval in a unit other than seconds, as
 *		pg_cron users and interval literals write it: a whole number followed
 *		by minute(s), hour(s), day(s) or week(s).  Sets *n (0 when there is
 *		no number) and *unit (singular).
 */
static bool
looks_like_other_interval(const char *text, int *n, const char **unit)
{
	static const char *const units[] = {"minute", "hour", "day", "week"};
	const char *p = text;
	const char *word;
	const char *word_end;
	int			i;

	while (*p && is_blank(*p))
		p++;
	*n = 0;
	if (!parse_number(&p, p + strlen(p), n))
		return false;
	while (*p && is_blank(*p))
		p++;
	word = p;
	while (*p && is_alpha(*p))
		p++;
	word_end = p;
	while (*p && is_blank(*p))
		p++;
	if (*p != '\0' || word_end == word)
		return false;
	for (i = 0; i < (int) (sizeof(units) / sizeof(units[0])); i++)
	{
		size_t		ulen = strlen(units[i]);
		CronSpan	w = {word, (size_t) (word_end - word)};
		CronSpan	singular = {word, ulen};

		if (w.len == ulen + 1 && (word[ulen] == 's' || word[ulen] == 'S') &&
			span_equals_ci(singular, units[i]))
			w.len = ulen;
		if (span_equals_ci(w, units[i]) ||
			(i == 0 && (span_equals_ci(w, "min") || span_equals_ci(w, "mins"))))
		{
			*unit = units[i];
			return true;
		}
	}
	return false;
}

/*
 * parse_interval
 *		Parse the N of "N seconds" (1-59).
 */
static bool
parse_interval(CronSpan number, SchedlockCronSchedule *out, SchedlockCronError *err)
{
	const char *p = number.p;
	const char *end = number.p + number.len;
	int			n = 0;
	bool		is_number;
	char		message[256];
	char		q[CRON_QUOTE_MAX + 4];

	is_number = parse_number(&p, end, &n);
	if (!is_number || p != end || n < 1 || n > 59)
	{
		char		detail[512];

		snprintf(message, sizeof(message),
				 "invalid interval \"%s\" in cron schedule", quote(number, q));
		if (is_number && p == end && n >= 60)
			instead_of_interval(detail, sizeof(detail),
								"The number of seconds must be a whole number from 1 to 59.",
								n % 60 == 0 ? n / 60 : 0, "minute");
		else
			snprintf(detail, sizeof(detail), "%s",
					 "The number of seconds must be a whole number from 1 to 59.");
		return set_error(err, SCHEDLOCK_CRON_FIELD_INTERVAL, message, detail);
	}
	out->flags = SCHEDLOCK_CRON_INTERVAL;
	out->interval_seconds = (uint8_t) n;
	return true;
}

/*
 * schedlock_cron_parse
 *		Parse a schedule.  On success fills *out and returns true; on failure
 *		fills *err (when not NULL) and returns false.  *out is zeroed either
 *		way.
 */
bool
schedlock_cron_parse(const char *text, SchedlockCronSchedule *out,
					 SchedlockCronError *err)
{
	return parse_schedule(text, SCHEDLOCK_CRON_DIALECT_SCHEDLOCK, out, err);
}

/*
 * schedlock_cron_parse_dialect
 *		Parse a schedule schedlock accepts as the given pg_cron release read
 *		it: the masks may then be empty (a job that never runs).  Returns
 *		false, like schedlock_cron_parse, for a schedule schedlock refuses.
 */
bool
schedlock_cron_parse_dialect(const char *text, SchedlockCronDialect dialect,
							 SchedlockCronSchedule *out)
{
	SchedlockCronSchedule mine;

	if (!schedlock_cron_parse(text, &mine, NULL))
	{
		memset(out, 0, sizeof(*out));
		return false;
	}
	return parse_schedule(text, dialect, out, NULL);
}

/*
 * parse_schedule
 *		schedlock_cron_parse, reading wrap-around ranges (and @yearly) the
 *		way dialect says.  The can-never-fire check is schedlock's own and
 *		is made for its dialect only.
 */
static bool
parse_schedule(const char *spec, SchedlockCronDialect dialect,
			   SchedlockCronSchedule *out, SchedlockCronError *err)
{
	CronSpan	fields[6];
	int			nfields;
	uint64_t	masks[5];
	char		message[256];
	char		detail[512];
	char		q[CRON_QUOTE_MAX + 4];
	char		q2[CRON_QUOTE_MAX + 4];
	size_t		len;
	int			i;
	CronSpan	number;
	int			n;
	const char *unit;

	memset(out, 0, sizeof(*out));
	if (spec == NULL)
		return set_error(err, SCHEDLOCK_CRON_FIELD_SCHEDULE,
						 "cron schedule must not be null",
						 "A NULL schedule has no fire times.");
	len = strlen(spec);
	if (len > SCHEDLOCK_CRON_MAX_LENGTH)
	{
		snprintf(detail, sizeof(detail),
				 "The schedule is %zu bytes long; at most %d bytes are accepted.",
				 len, SCHEDLOCK_CRON_MAX_LENGTH);
		return set_error(err, SCHEDLOCK_CRON_FIELD_SCHEDULE,
						 "cron schedule is too long", detail);
	}

	nfields = split_fields(spec, fields, 6);
	if (nfields == 0)
		return set_error(err, SCHEDLOCK_CRON_FIELD_SCHEDULE,
						 "cron schedule is empty",
						 "The schedule contains nothing but whitespace.");

	if (fields[0].p[0] == '@')
		return parse_keyword(fields[0], nfields, fields[nfields > 1 ? 1 : 0], out,
							 dialect, err);

	if (nfields <= 2 && looks_like_interval(spec, &number))
		return parse_interval(number, out, err);
	if (nfields <= 2 && looks_like_other_interval(spec, &n, &unit))
	{
		CronSpan	whole = {spec, len};

		snprintf(message, sizeof(message),
				 "\"%s\" is not a cron schedule", quote(whole, q));
		instead_of_interval(detail, sizeof(detail),
							"Only seconds (1 to 59) may be written as an interval.",
							n, unit);
		return set_error(err, SCHEDLOCK_CRON_FIELD_SCHEDULE, message, detail);
	}

	if (nfields > 5)
	{
		snprintf(message, sizeof(message),
				 "unexpected sixth field \"%s\" in cron schedule", quote(fields[5], q));
		snprintf(detail, sizeof(detail),
				 "The schedule has %d fields; a cron schedule has exactly five: minute, hour, day-of-month, month and day-of-week.",
				 nfields);
		return set_error(err, SCHEDLOCK_CRON_FIELD_SCHEDULE, message, detail);
	}
	if (nfields < 5)
	{
		CronSpan	whole = {spec, len};

		snprintf(message, sizeof(message),
				 "missing %s field in cron schedule \"%s\"",
				 field_specs[nfields].name, quote(whole, q));
		snprintf(detail, sizeof(detail),
				 "The schedule has %d field%s; a cron schedule has exactly five: minute, hour, day-of-month, month and day-of-week.",
				 nfields, nfields == 1 ? "" : "s");
		return set_error(err, SCHEDLOCK_CRON_FIELD_SCHEDULE, message, detail);
	}

	for (i = 0; i < 5; i++)
	{
		if (i == 2 && fields[2].len == 1 && fields[2].p[0] == '$')
		{
			out->flags |= SCHEDLOCK_CRON_LAST_DAY;
			masks[2] = 0;
			continue;
		}
		if (!parse_field(&field_specs[i], fields[i], &masks[i], dialect, err))
			return false;
	}
	out->minutes = masks[0];
	out->hours = (uint32_t) masks[1];
	out->days = (uint32_t) masks[2];
	out->months = (uint16_t) masks[3];
	out->weekdays = (uint8_t) masks[4];
	if (fields[2].p[0] == '*')
		out->flags |= SCHEDLOCK_CRON_DOM_STAR;
	if (fields[4].p[0] == '*')
		out->flags |= SCHEDLOCK_CRON_DOW_STAR;

	if (dialect == SCHEDLOCK_CRON_DIALECT_SCHEDLOCK && schedlock_cron_never_fires(out))
	{
		snprintf(message, sizeof(message),
				 "day-of-month field \"%s\" selects no day that exists in month field \"%s\"",
				 quote(fields[2], q), quote(fields[3], q2));
		snprintf(detail, sizeof(detail),
				 "Because the day-of-week field \"%s\" starts with \"*\", a day must match the day-of-month field as well, so the schedule would never fire.",
				 quote(fields[4], q));
		set_error(err, SCHEDLOCK_CRON_FIELD_DAY_OF_MONTH, message, detail);
		if (err != NULL)
			err->hint = "Choose days that exist in the selected months (February has 29 days in leap years; "
				"April, June, September and November have 30), or use $ for the last day of the month.";
		memset(out, 0, sizeof(*out));
		return false;
	}
	return true;
}
