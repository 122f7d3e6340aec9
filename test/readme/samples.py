#!/usr/bin/python3
"""test/readme/samples.py - run or compile every code sample of the documentation.

The samples are read from the Markdown files themselves (README.md and
docs/*.md), so the documentation and this test cannot drift apart.  Every
fenced block with a language tag (sql, python, java, javascript, c, sh) must
be preceded by a marker line

    <!-- sample: KIND NAME -->       KIND is sql, python, java, javascript or c
    <!-- sample: exempt REASON -->   not run, and why

and a tagged block without one fails the test.  Blocks without a language
tag are output, signatures or configuration and are not run.  NAME is
unique across all the files: the dictionaries below are keyed by it, so a
sample keeps its checks when it moves from one page to another.

  sql     each block runs with psql -v ON_ERROR_STOP=1 in a new database
          with the extension (PGHOST/PGPORT/PGUSER: a server with schedlock
          preloaded; not for NO_EXTENSION), after the setup of SETUP[NAME].  With CHECK[NAME], a
          comment line "--  value" after a statement is its expected result
          (a "  (note)" after the value is not compared).
  python  runs with /usr/bin/python3 (Debian's psycopg 3: a sample must
          "import psycopg", and psycopg2 is refused) after PRELUDE[NAME],
          which defines what the sample leaves to the reader (dsn, work(),
          the database), and EPILOGUE[NAME] checks the effect.
  javascript
          runs with /usr/bin/node (Debian's nodejs) and the pg module of npm
          (pg@8, installed once per run with npm into WORKDIR/node), after
          PRELUDE[NAME], which defines what the sample leaves to the reader
          and an async function __prelude() that runs before the sample (the
          sample's code runs inside an async function).  The sample runs
          until EPILOGUE[NAME], the body of the async function __epilogue(),
          has checked its effect: the prelude calls it and exits.
  java    compiled with javac inside a class with the imports and the fields
          the sample uses; the JDBC driver (Debian's libpostgresql-jdbc-java)
          is on the class path.  Not run: servers here listen on a Unix
          socket only, which the JDBC driver cannot reach.
  c       compiled with cc against libpq.

Besides the samples it checks, without a server: that sample names are
unique, that every key of the dictionaries below names a sample, and that
every relative link of the files points to a file that exists and every
"#anchor" to a heading of the page it names.

Prints one line per check and "N passed, M failed"; exits non-zero on any
failure.  Usage:

    samples.py WORKDIR FILE...            run everything
    samples.py --static FILE...           only the checks that need no server
"""

import os
import re
import subprocess
import sys

MARKER = re.compile(r'^<!--\s*sample:\s*(\S+)\s*(.*?)\s*-->\s*$')
FENCE = re.compile(r'^```(\S*)\s*$')
RUN_TAGS = {'sql', 'python', 'java', 'javascript', 'c', 'sh', 'bash', 'shell'}


# setup run in the sample's database before a SQL sample
GRANT_ROLE = ("DO $$ BEGIN CREATE ROLE app_role LOGIN; "
              "EXCEPTION WHEN duplicate_object THEN NULL; END $$;\n")
SETUP = {
    # the application's own table, written in the transaction that asserts
    'assert': 'CREATE TABLE invoice_run (day date, status text);\n',
    # the table the README's SQL job sample creates just before
    'readme-vacuum-job': 'CREATE TABLE sessions (id bigint PRIMARY KEY, expires timestamptz NOT NULL);\n',
    # the README's NOTIFY job creates the role of the application servers
    'readme-notify-job': 'DROP ROLE IF EXISTS mailer;\n',
    # the role a DBA grants the job functions to
    'grant': GRANT_ROLE,
    'readme-grant': GRANT_ROLE,
    # a database that still has release 1.0
    'upgrade': "DROP EXTENSION schedlock;\nCREATE EXTENSION schedlock VERSION '1.0';\n",
}

# SQL samples that create the extension themselves
NO_EXTENSION = {'create-extension', 'create-extension-schema'}

# SQL samples whose "--  value" comments are checked
CHECK = {'cron-next-intro', 'cron-next-after', 'cron-next', 'cron-next-runs', 'cron-dst'}

# the NOTIFY listener loops forever.  Before it starts, a job of its owner
# (mailer) has notified a run nobody heard: the listener must catch up on
# it, then claim the next run from its notification; after the second
# schedlock_finish_run it has done what it shows, and the harness ends it.
LISTEN_PRELUDE = r'''
import psycopg, time
_done = {'finished': []}
def send_statistics(payload):
    _done['payload'] = payload
class _Row:
    def __init__(self, row):
        self.row = row
    def fetchone(self):
        return self.row
class _Conn(psycopg.Connection):
    def execute(self, query, params=None, **kw):
        cur = super().execute(query, params, **kw)
        if 'schedlock_claim_run_payload' in str(query):
            # the payload as claimed (the sample may define its own sender)
            row = cur.fetchone()
            if row[0]:
                _done['payload'] = row[1]
            return _Row(row)
        if 'schedlock_finish_run' in str(query):
            _done['finished'].append((params[0], cur.fetchone()[0]))
            if len(_done['finished']) == 2:
                raise SystemExit(0)
        return cur
_connect = psycopg.Connection.connect
psycopg.connect = _Conn.connect
# the sample logs in as the job's owner, mailer, granted the job functions
with _connect("dbname=app", autocommit=True) as _s:
    _s.execute("DO $$ BEGIN CREATE ROLE mailer LOGIN; "
               "EXCEPTION WHEN duplicate_object THEN NULL; END $$")
    _s.execute("GRANT INSERT ON schedlock.jobs TO mailer")
with _connect("dbname=app user=mailer", autocommit=True) as _m:
    _m.execute("SELECT schedlock.schedule_job('send_statistics', '1 seconds', "
               "notify_channel => 'stats_mail', payload => '{\"to\": \"ops@example.com\"}')")
    # a run notified while nobody listened
    for _i in range(150):
        _r = _m.execute("SELECT min(run_id) FROM schedlock.job_runs "
                        "WHERE status = 'pending'").fetchone()[0]
        if _r is not None:
            break
        time.sleep(0.1)
    assert _r is not None, 'no run was notified within 15 s'
    _done['caught'] = _r
'''

LISTEN_EPILOGUE = r'''
_f = _done['finished']
assert len(_f) == 2 and all(_ok is True for _, _ok in _f), _f
assert _f[0][0] == _done['caught'], ('the run notified before LISTEN was not caught up first', _f, _done)
assert _done.get('payload') == {'to': 'ops@example.com'}, _done
with _connect("dbname=app") as _c:
    _rows = _c.execute("SELECT run_id, status, claimed_by FROM schedlock.job_runs"
                       " WHERE status = 'succeeded' ORDER BY run_id").fetchall()
assert [_r[0] for _r in _rows] == [_r for _r, _ in _f], (_rows, _f)
assert all(_r[1:] == ('succeeded', 'app-1') for _r in _rows), _rows
print("caught up on run %d, claimed run %d from its notification" % (_f[0][0], _f[1][0]))
'''

# The Node.js listener loops forever, and reconnects.  Before it starts, a
# job of its owner (mailer) has notified a run nobody heard: the listener
# must catch up on it, then claim the next run from its notification.  After
# that second schedlock_finish_run the harness terminates the listener's
# backend (pg_terminate_backend) and waits until a run is notified while
# nobody listens: the listener must reconnect, catch up on that run, and
# claim the one after it from a notification on its new connection (LISTEN
# again).  Then EPILOGUE checks that no run was lost and the harness exits.
NODE_LISTEN_PRELUDE = r'''
const __pg = require("pg");
const __state = { finished: [], caughtUp: [], payloads: [] };
async function sendStatistics(payload) {
  __state.payloads.push(payload);
}
// SQL as the superuser (PGUSER), or as USER, on a connection of its own
async function __sql(sql, params, user) {
  const c = new __pg.Client({ database: "app", user });
  c.__harness = true;
  await c.connect();
  try {
    return (await c.query(sql, params)).rows;
  } finally {
    await c.end();
  }
}
const __sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// the first pending run of the job, waiting at most 15 s
async function __pendingRun(after) {
  for (let i = 0; i < 150; i++) {
    const [r] = await __sql("SELECT min(run_id) AS run_id FROM schedlock.job_runs" +
                            " WHERE status = 'pending' AND run_id > $1", [after]);
    if (r.run_id !== null) return r.run_id;
    await __sleep(100);
  }
  throw new Error("no run was notified within 15 s");
}
// the sample logs in as the job's owner, mailer, granted the job functions
async function __prelude() {
  await __sql("DO $$ BEGIN CREATE ROLE mailer LOGIN; " +
              "EXCEPTION WHEN duplicate_object THEN NULL; END $$");
  await __sql("GRANT INSERT ON schedlock.jobs TO mailer");
  await __sql("SELECT schedlock.schedule_job('send_statistics', '1 seconds', " +
              "notify_channel => 'stats_mail', payload => '{\"to\": \"ops@example.com\"}')",
              [], "mailer");
  __state.first = await __pendingRun(0);    // a run notified while nobody listened
}
async function __afterFinish(conn, runId, result) {
  __state.finished.push({ run: String(runId), ok: result.rows[0].schedlock_finish_run,
                          pid: conn.processID });
  const n = __state.finished.length;
  if (n === 2) {
    await __sql("SELECT pg_terminate_backend($1)", [conn.processID]);
    for (let i = 0; i < 100; i++) {
      const [r] = await __sql("SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = $1",
                              [conn.processID]);
      if (r.n === 0) break;
      await __sleep(100);
    }
    __state.missed = await __pendingRun(runId);   // notified while nobody listened
  } else if (n === 4) {
    try {
      await __epilogue();
    } catch (e) {
      console.error(e, JSON.stringify(__state));
      process.exit(1);
    }
    process.exit(0);
  }
}
// watch the sample's own statements: the catch-up query and the finish
const __query = __pg.Client.prototype.query;
__pg.Client.prototype.query = function (...args) {
  const p = __query.apply(this, args);
  const text = typeof args[0] === "string" ? args[0] : "";
  if (this.__harness || !p || typeof p.then !== "function") return p;
  if (text.includes("status = 'pending'"))
    return p.then((res) => {
      __state.caughtUp.push(...res.rows.map((r) => String(r.run_id)));
      return res;
    });
  if (text.includes("schedlock_finish_run"))
    return p.then(async (res) => {
      await __afterFinish(this, args[1][0], res);
      return res;
    });
  return p;
};
'''

NODE_LISTEN_EPILOGUE = r'''
const f = __state.finished;
const assert = require("assert");
assert.ok(f.every((x) => x.ok === true), "a finish returned false");
assert.strictEqual(f[0].run, String(__state.first), "the run notified before LISTEN was not caught up first");
assert.strictEqual(f[2].run, String(__state.missed), "the run notified while disconnected was not caught up first");
assert.ok(!__state.caughtUp.includes(f[3].run), "the last run was not claimed from a notification");
assert.ok(f[0].pid === f[1].pid && f[2].pid === f[3].pid && f[1].pid !== f[2].pid,
          "the listener did not reconnect");
assert.deepStrictEqual(__state.payloads[0], { to: "ops@example.com" });
const rows = await __sql("SELECT run_id::text, status, claimed_by FROM schedlock.job_runs" +
                         " WHERE run_id <= $1 AND status <> 'skipped' ORDER BY run_id", [f[3].run]);
assert.deepStrictEqual(rows.map((r) => r.run_id), f.map((x) => x.run), "a notified run was not claimed");
assert.ok(rows.every((r) => r.status === "succeeded" && r.claimed_by === "app-1"), JSON.stringify(rows));
console.log("caught up on run %s, claimed run %s from its notification; after the connection " +
            "was terminated caught up on run %s and claimed run %s from a notification",
            f[0].run, f[1].run, f[2].run, f[3].run);
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
    'readme-listen': LISTEN_PRELUDE,
    'listen-node': NODE_LISTEN_PRELUDE,
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
    'readme-listen': LISTEN_EPILOGUE,
    'listen-node': NODE_LISTEN_EPILOGUE,
}

# databases a Python or JavaScript sample connects to by name
SAMPLE_DB = {'listen': 'app', 'readme-listen': 'app', 'listen-node': 'app'}

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
    target = SAMPLE_DB.get(name, db)
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


# the pg module of npm the JavaScript samples run with
NODE_PG = 'pg@8'


def check_javascript(name, body, db, workdir):
    if name not in PRELUDE or name not in EPILOGUE:
        return False, 'no prelude or epilogue for javascript sample "%s" in test/readme/samples.py' % name
    d = os.path.join(workdir, 'node')
    env = dict(os.environ, npm_config_cache=os.path.join(d, '.npm'),
               npm_config_update_notifier='false')
    if not os.path.isdir(os.path.join(d, 'node_modules', 'pg')):
        os.makedirs(d, exist_ok=True)
        try:
            r = run(['npm', 'install', '--no-audit', '--no-fund', '--loglevel=error',
                     '--prefix', d, NODE_PG], env=env, timeout=300)
        except subprocess.TimeoutExpired:
            return False, 'npm install %s timed out after 300 s' % NODE_PG
        if r.returncode != 0:
            return False, 'npm install %s: %s' % (NODE_PG, r.stdout)
    target = SAMPLE_DB.get(name, db)
    r = new_database(target)
    if r.returncode != 0:
        return False, r.stdout
    path = os.path.join(d, 'sample_%s.js' % re.sub(r'\W', '_', name))
    with open(path, 'w') as f:
        f.write(PRELUDE[name])
        f.write('async function __epilogue() {\n%s}\n' % EPILOGUE[name])
        f.write('(async () => {\nawait __prelude();\n%s})().catch((e) => {\n'
                '  console.error(e);\n  process.exit(1);\n});\n' % body)
    env = dict(os.environ, PGDATABASE=target, PGTZ='UTC')
    try:
        r = run(['/usr/bin/node', path], env=env, timeout=60, cwd=d)
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


LINK = re.compile(r'!?\[[^\]]*\]\(([^)\s]+)\)')


def slug(heading):
    """The anchor GitHub gives a heading: lower case, punctuation but - and _
    dropped, blanks made hyphens."""
    h = heading.strip().lower()
    h = re.sub(r'[^\w\- ]', '', h)
    return h.replace(' ', '-')


def prose_lines(path):
    """(line number, text) of the lines outside fenced blocks."""
    fence = False
    for n, line in enumerate(open(path, encoding='utf-8').read().split('\n'), 1):
        if line.startswith('```'):
            fence = not fence
            continue
        if not fence:
            yield n, line


def anchors(path):
    """The anchors of a Markdown file's headings (a repeated heading gets -1,
    -2, ... as on GitHub)."""
    seen = {}
    out = set()
    for _, line in prose_lines(path):
        m = re.match(r'^#{1,6} (.*)$', line)
        if m:
            s = slug(m.group(1))
            if s in seen:
                seen[s] += 1
                s = '%s-%d' % (s, seen[s])
            else:
                seen[s] = 0
            out.add(s)
    return out


def check_links(path):
    """Every relative link of the file points to a file that exists, and
    every #anchor to a heading of the Markdown page it names."""
    bad = []
    for n, line in prose_lines(path):
        for target in LINK.findall(line):
            if re.match(r'^[a-z]+:', target):
                continue                    # https:, mailto:
            file, _, anchor = target.partition('#')
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file)) if file else path
            if not os.path.exists(dest):
                bad.append('%s:%d: %s: no such file' % (path, n, target))
            elif anchor and dest.endswith('.md') and anchor not in anchors(dest):
                bad.append('%s:%d: %s: no heading with that anchor' % (path, n, target))
    return bad


def static_checks(files, found):
    """(label, ok, output) of the checks that need no server."""
    out = []
    names = {}
    for path, (line, tag, kind, name, body) in found:
        if kind and kind != 'exempt':
            names.setdefault(name, []).append('%s:%d' % (path, line))
    dups = ['"%s" at %s' % (n, ', '.join(w)) for n, w in sorted(names.items()) if len(w) > 1]
    out.append(('sample names are unique', not dups, '\n'.join(dups)))
    stale = []
    for dname, keys in (('SETUP', SETUP), ('NO_EXTENSION', NO_EXTENSION), ('CHECK', CHECK),
                        ('PRELUDE', PRELUDE), ('EPILOGUE', EPILOGUE), ('SAMPLE_DB', SAMPLE_DB)):
        stale += ['%s["%s"] names no sample' % (dname, k) for k in keys if k not in names]
    out.append(('every key of the dictionaries names a sample', not stale, '\n'.join(stale)))
    for path in files:
        bad = check_links(path)
        out.append(('links of %s' % path, not bad, '\n'.join(bad)))
    return out


def check_block(path, n, line, tag, kind, name, body, workdir):
    """(ok, output) for one tagged block; None when it is exempt."""
    if tag not in RUN_TAGS:
        return False, 'unknown language tag "%s"' % tag
    if kind is None:
        return False, ('no "<!-- sample: KIND NAME -->" or '
                       '"<!-- sample: exempt REASON -->" line before the block')
    if kind == 'exempt':
        if not name:
            return False, 'an exempt sample must say why'
        return None
    if not name:
        return False, 'a sample needs a name'
    if kind != tag:
        return False, 'marker says %s, the block is %s' % (kind, tag)
    if kind == 'python' and ('psycopg2' in body or
                             not re.search(r'^import .*\bpsycopg\b', body, re.M)):
        return False, 'a Python sample uses psycopg 3: "import psycopg", not psycopg2'
    if kind == 'javascript' and not re.search(r'require\("pg"\)', body):
        return False, 'a JavaScript sample uses node-postgres: require("pg")'
    if workdir is None:
        return True, ''
    db = 'readme_sample_%d' % n
    if kind == 'sql':
        return check_sql(name, body, db)
    if kind == 'python':
        return check_python(name, body, db, workdir)
    if kind == 'javascript':
        return check_javascript(name, body, db, workdir)
    if kind == 'java':
        return check_java(name, body, workdir)
    if kind == 'c':
        return check_c(name, body, workdir)
    return False, 'unknown sample kind "%s"' % kind


def main():
    args = sys.argv[1:]
    if args and args[0] == '--static':
        workdir, files = None, args[1:]
    elif len(args) >= 2:
        workdir, files = args[0], args[1:]
    else:
        sys.exit('usage: samples.py WORKDIR FILE... | samples.py --static FILE...')
    found = [(path, s) for path in files for s in samples(path)]
    passed = failed = exempt = 0

    def report(ok, label, out):
        nonlocal passed, failed
        if ok:
            passed += 1
            print('ok      %s' % label)
        else:
            failed += 1
            print('FAILED  %s\n%s' % (label, out.rstrip()))

    for label, ok, out in static_checks(files, found):
        report(ok, label, out)
    for n, (path, (line, tag, kind, name, body)) in enumerate(found):
        label = '%s:%d %s %s' % (path, line, tag, name)
        result = check_block(path, n, line, tag, kind, name, body, workdir)
        if result is None:
            exempt += 1
            print('exempt  %s:%d %s (%s)' % (path, line, tag, name))
            continue
        if workdir is not None:
            # each sample database has two workers of its own: drop it, so
            # that the samples never run the cluster out of background
            # worker slots
            for db in ('readme_sample_%d' % n, 'app'):
                psql('postgres', 'SET client_min_messages = warning;\n'
                     'DROP DATABASE IF EXISTS %s;\n' % db)
        report(result[0], label, result[1])
    print('%d exempt' % exempt)
    print('%d passed, %d failed' % (passed, failed))
    sys.exit(0 if failed == 0 and passed > 0 else 1)


if __name__ == '__main__':
    main()
