#!/usr/bin/python3
"""test/readme/samples.py - run or compile every code sample of README.md.

The samples are read from README.md itself, so the README and this test
cannot drift apart.  Every fenced block with a language tag (sql, python,
java, c, sh) must be preceded by a marker line

    <!-- sample: KIND NAME -->       KIND is sql, python, java or c
    <!-- sample: exempt REASON -->   not run, and why

and a tagged block without one fails the test.  Blocks without a language
tag are output, signatures or configuration and are not run.

  sql     each block runs with psql -v ON_ERROR_STOP=1 in a new database
          with the extension (PGHOST/PGPORT/PGUSER: a server with schedlock
          preloaded; not for NO_EXTENSION), after the setup of SETUP[NAME].  With CHECK[NAME], a
          comment line "--  value" after a statement is its expected result
          (a "  (note)" after the value is not compared).
  python  runs with /usr/bin/python3 (Debian's psycopg2 and psycopg 3) after
          PRELUDE[NAME], which defines what the sample leaves to the reader
          (dsn, work(), the database), and EPILOGUE[NAME] checks the effect.
  java    compiled with javac inside a class with the imports and the fields
          the sample uses; the JDBC driver (Debian's libpostgresql-jdbc-java)
          is on the class path.  Not run: servers here listen on a Unix
          socket only, which the JDBC driver cannot reach.
  c       compiled with cc against libpq.

Prints one line per sample and "N passed, M failed"; exits non-zero on any
failure.  Usage: samples.py README.md WORKDIR
"""

import os
import re
import subprocess
import sys

MARKER = re.compile(r'^<!--\s*sample:\s*(\S+)\s*(.*?)\s*-->\s*$')
FENCE = re.compile(r'^```(\S*)\s*$')
RUN_TAGS = {'sql', 'python', 'java', 'c', 'sh', 'bash', 'shell'}


# setup run in the sample's database before a SQL sample
SETUP = {
    # the application's own table, written in the transaction that asserts
    'assert': 'CREATE TABLE invoice_run (day date, status text);\n',
    'schedule-jobs': 'CREATE TABLE sessions (id int, expires timestamptz);\n',
    # a database that still has release 1.0
    'upgrade': "DROP EXTENSION schedlock;\nCREATE EXTENSION schedlock VERSION '1.0';\n",
}

# SQL samples that create the extension themselves
NO_EXTENSION = {'create-extension', 'create-extension-schema'}

# SQL samples whose "--  value" comments are checked
CHECK = {'cron-next-intro', 'cron-next-after', 'cron-next', 'cron-next-runs', 'cron-dst'}

# the NOTIFY listener loops forever: after the first schedlock_finish_run it
# has done what it shows, and the harness ends it
LISTEN_PRELUDE = r'''
import psycopg2, psycopg2.extensions, threading
_done = {}
def send_statistics(payload):
    _done['payload'] = payload
_orig_connect = psycopg2.connect
class _Cursor(psycopg2.extensions.cursor):
    def execute(self, query, vars=None):
        r = super().execute(query, vars)
        if 'schedlock_finish_run' in query:
            _done['finished'] = self.fetchone()[0]
            raise SystemExit(0)
        return r
def _connect(dsn, **kw):
    kw.setdefault('cursor_factory', _Cursor)
    return _orig_connect(dsn, **kw)
psycopg2.connect = _connect
# the sample logs in as the job's owner, mailer, granted the job functions
_s = _orig_connect("dbname=app")
_s.autocommit = True
_s.cursor().execute("DO $$ BEGIN CREATE ROLE mailer LOGIN; "
                    "EXCEPTION WHEN duplicate_object THEN NULL; END $$; "
                    "GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO mailer")
_s.close()
def _due():
    import time
    time.sleep(1)
    c = _orig_connect("dbname=app user=mailer")
    c.autocommit = True
    cur = c.cursor()
    cur.execute("SELECT schedule_job('send_statistics', '1 second', "
                "notify_channel => 'stats_mail', payload => '{\"to\": \"ops@example.com\"}')")
threading.Thread(target=_due, daemon=True).start()
'''

LISTEN_EPILOGUE = r'''
assert _done.get('finished') is True, _done
import psycopg2 as _p
_c = _p.connect("dbname=app")
_cur = _c.cursor()
_cur.execute("SELECT status, claimed_by FROM schedlock.job_runs WHERE status = 'succeeded'")
_rows = _cur.fetchall()
assert _rows and all(r == ('succeeded', 'app-1') for r in _rows), _rows
print("claimed and finished one run:", _done.get('payload'))
'''

PRELUDE = {
    'lease-renew': '''
import psycopg
dsn = ""
def work():
    return range(3)
def process(batch):
    pass
''',
    'listen': LISTEN_PRELUDE,
}

EPILOGUE = {
    'lease-renew': '''
with psycopg.connect(dsn) as _c:
    _r = _c.execute("SELECT released_at IS NOT NULL FROM schedlock.lock_state"
                    " WHERE lock_name = 'timer-service'").fetchone()
    assert _r == (True,), _r
print("acquired, extended 3 times, released")
''',
    'listen': LISTEN_EPILOGUE,
}

# databases a Python sample connects to by name
PYTHON_DB = {'listen': 'app'}

JAVA_WRAPPER = '''
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import javax.sql.DataSource;

@interface Scheduled {
    String cron();
}

interface Mailer {
    void sendStatistics(long token);
}

class Sample {
    DataSource dataSource = new org.postgresql.ds.PGSimpleDataSource();
    Mailer mailer;

%s
}
'''


def samples(readme):
    """(line, tag, kind, name, text) for every tagged fenced block."""
    out = []
    lines = open(readme, encoding='utf-8').read().split('\n')
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        tag = m.group(1).lower()
        start = i
        j = i + 1
        while j < len(lines) and not lines[j].startswith('```'):
            j += 1
        body = '\n'.join(lines[i + 1:j]) + '\n'
        marker = None
        k = start - 1
        while k >= 0 and lines[k].strip() == '':
            k -= 1
        if k >= 0:
            marker = MARKER.match(lines[k])
        if tag:
            kind = marker.group(1) if marker else None
            name = marker.group(2) if marker else ''
            out.append((start + 1, tag, kind, name, body))
        i = j + 1
    return out


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, **kw)


def psql(db, sql, extra=()):
    return run(['psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', db, *extra],
               input=sql)


def new_database(db, extension=True):
    r = psql('postgres', 'SET client_min_messages = warning;\n'
             'DROP DATABASE IF EXISTS %s;\nCREATE DATABASE %s;\n' % (db, db))
    if r.returncode == 0 and extension:
        r = psql(db, 'CREATE EXTENSION schedlock;\n')
    return r


def statements(body):
    """(statement, [expected rows]) in order; expected rows come from the
    "--  value" comment lines right after a statement."""
    result = []
    cur = []
    for line in body.split('\n'):
        m = re.match(r'^--  (\S.*?)(\s{2,}\(.*\))?\s*$', line)
        if m and result and not cur:
            result[-1][1].append(m.group(1))
            continue
        if line.strip().startswith('--') and not cur:
            continue
        if line.strip():
            cur.append(line)
        if line.rstrip().endswith(';'):
            result.append(('\n'.join(cur) + '\n', []))
            cur = []
    return result


def check_sql(name, body, db):
    r = new_database(db, name not in NO_EXTENSION)
    if r.returncode != 0:
        return False, r.stdout
    if name in SETUP:
        r = psql(db, SETUP[name])
        if r.returncode != 0:
            return False, 'setup: ' + r.stdout
    if name not in CHECK:
        r = psql(db, body)
        return r.returncode == 0, r.stdout
    for stmt, expected in statements(body):
        r = psql(db, '\\pset null NULL\n' + stmt, ['-A', '-t', '-F', ' | '])
        if r.returncode != 0:
            return False, r.stdout
        got = [l for l in r.stdout.split('\n') if l != '']
        if expected and got != expected:
            return False, '%sexpected %s\ngot      %s' % (stmt, expected, got)
    return True, ''


def check_python(name, body, db, workdir):
    if name not in PRELUDE:
        return False, 'no prelude for python sample "%s" in test/readme/samples.py' % name
    target = PYTHON_DB.get(name, db)
    r = new_database(target)
    if r.returncode != 0:
        return False, r.stdout
    path = os.path.join(workdir, 'sample_%s.py' % re.sub(r'\W', '_', name))
    with open(path, 'w') as f:
        f.write(PRELUDE[name])
        f.write('try:\n')
        for line in body.split('\n'):
            f.write('    ' + line + '\n')
        f.write('except SystemExit:\n    pass\n')
        f.write(EPILOGUE.get(name, ''))
    env = dict(os.environ, PGDATABASE=target, PGTZ='UTC')
    try:
        r = run(['/usr/bin/python3', path], env=env, timeout=60)
    except subprocess.TimeoutExpired:
        return False, 'timed out after 60 s'
    return r.returncode == 0, r.stdout


def check_java(name, body, workdir):
    d = os.path.join(workdir, 'java-' + re.sub(r'\W', '_', name))
    os.makedirs(d, exist_ok=True)
    indented = '\n'.join('    ' + l if l else l for l in body.split('\n'))
    with open(os.path.join(d, 'Sample.java'), 'w') as f:
        f.write(JAVA_WRAPPER % indented)
    r = run(['javac', '-Xlint:all', '-cp', '/usr/share/java/postgresql.jar',
             '-d', d, os.path.join(d, 'Sample.java')])
    return r.returncode == 0, r.stdout


def check_c(name, body, workdir):
    path = os.path.join(workdir, 'sample_%s.c' % re.sub(r'\W', '_', name))
    with open(path, 'w') as f:
        f.write(body)
    inc = run(['pg_config', '--includedir']).stdout.strip()
    r = run(['cc', '-Wall', '-Werror', '-I' + inc, '-o', path[:-2], path, '-lpq'])
    return r.returncode == 0, r.stdout


def main():
    readme, workdir = sys.argv[1], sys.argv[2]
    passed = failed = exempt = 0
    for n, (line, tag, kind, name, body) in enumerate(samples(readme)):
        label = 'README.md:%d %s %s' % (line, tag, name)
        if tag not in RUN_TAGS:
            ok, out = False, 'unknown language tag "%s"' % tag
        elif kind is None:
            ok, out = False, ('no "<!-- sample: KIND NAME -->" or '
                              '"<!-- sample: exempt REASON -->" line before the block')
        elif kind == 'exempt':
            if not name:
                ok, out = False, 'an exempt sample must say why'
            else:
                exempt += 1
                print('exempt  %s (%s)' % ('README.md:%d %s' % (line, tag), name))
                continue
        elif kind != tag and not (kind == 'sql' and tag == 'sql'):
            ok, out = False, 'marker says %s, the block is %s' % (kind, tag)
        elif kind == 'sql':
            ok, out = check_sql(name, body, 'readme_sample_%d' % n)
        elif kind == 'python':
            ok, out = check_python(name, body, 'readme_sample_%d' % n, workdir)
        elif kind == 'java':
            ok, out = check_java(name, body, workdir)
        elif kind == 'c':
            ok, out = check_c(name, body, workdir)
        else:
            ok, out = False, 'unknown sample kind "%s"' % kind
        # each sample database has two workers of its own: drop it, so that
        # the samples never run the cluster out of background worker slots
        for db in ('readme_sample_%d' % n, 'app'):
            psql('postgres', 'SET client_min_messages = warning;\n'
                 'DROP DATABASE IF EXISTS %s;\n' % db)
        if ok:
            passed += 1
            print('ok      %s' % label)
        else:
            failed += 1
            print('FAILED  %s\n%s' % (label, out.rstrip()))
    print('%d exempt' % exempt)
    print('%d passed, %d failed' % (passed, failed))
    sys.exit(0 if failed == 0 and passed > 0 else 1)


if __name__ == '__main__':
    main()
