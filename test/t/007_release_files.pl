# 007_release_files.pl: the release files agree with each other and with the
# PGXN Meta Spec 1.0.0 (https://pgxn.org/meta/spec.txt).
#
# META.json has the spec's required keys (name, abstract, maintainer,
# version, license, provides, meta-spec), semantic versions, and its version
# is schedlock.control's default_version (1.1 is 1.1.0); the provided
# extension's file exists; LICENSE is the PostgreSQL License that META.json
# names; CHANGELOG.md has a section for the version; and the upgrade scripts
# lead from 1.0 to default_version.  Every path under src/ that docs/,
# sql/, src/ or test/ names exists (not the released scripts of 1.0 and
# 1.1, which are never edited, nor the dated benchmark results).  The C
# files include a header of their own folder by its bare name and one of
# another folder by its path from src/, and none includes a part above its
# own (src/base is included by all, includes only itself).  Only the files
# of src/sched/store tell the releases of the tables apart.  No server is
# needed.
use strict;
use warnings;
use File::Find;
use JSON::PP;
use Test::More;

my $src = $ENV{SRCDIR} // '.';

sub slurp
{
	my ($path) = @_;
	open(my $fh, '<', "$src/$path") or return undef;
	local $/;
	my $text = <$fh>;
	close $fh;
	return $text;
}

my $control = slurp('schedlock.control');
ok(defined $control, 'schedlock.control exists');
my ($default_version) = $control =~ /^default_version\s*=\s*'([^']+)'/m;
ok(defined $default_version, "default_version is $default_version");

# "1.1" as a semantic version
my $semver = $default_version;
$semver .= '.0' while ($semver =~ tr/.//) < 2;

my $meta_text = slurp('META.json');
ok(defined $meta_text, 'META.json exists');
my $meta = eval { JSON::PP->new->decode($meta_text) };
ok(ref $meta eq 'HASH', 'META.json is a JSON object') or diag($@);

foreach my $key (qw(name abstract maintainer version license provides meta-spec))
{
	ok(exists $meta->{$key}, "META.json has the required key \"$key\"");
}
is($meta->{name}, 'schedlock', 'name is schedlock');
ok(length($meta->{abstract} // '') > 0, 'the abstract is not empty');
ok((ref $meta->{maintainer} eq 'ARRAY' && @{ $meta->{maintainer} } > 0)
	  || (!ref $meta->{maintainer} && length($meta->{maintainer} // '')),
	'maintainer is a string or a non-empty list');
is($meta->{'meta-spec'}{version}, '1.0.0', 'meta-spec version 1.0.0');

my $semver_re = qr/^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z-]+)?$/;
like($meta->{version}, $semver_re, 'version is a semantic version');
is($meta->{version}, $semver,
	"version equals schedlock.control's default_version $default_version");

my $ext = $meta->{provides}{schedlock};
ok(ref $ext eq 'HASH', 'provides lists the extension schedlock');
ok(defined $ext->{file} && $ext->{file} =~ /\.sql$/ && -f "$src/$ext->{file}",
	"provides.schedlock.file ($ext->{file}) is an existing SQL file");
is($ext->{version}, $semver, 'provides.schedlock.version is the same version');
ok(!defined $ext->{docfile} || -f "$src/$ext->{docfile}",
	'provides.schedlock.docfile exists');
ok(!defined $meta->{release_status}
	  || $meta->{release_status} =~ /^(stable|testing|unstable)$/,
	'release_status is stable, testing or unstable');

is($meta->{license}, 'postgresql', 'META.json names the PostgreSQL License');

# where the project lives
like($meta->{resources}{repository}{url} // '', qr{^https://\S+\.git$},
	'META.json: resources.repository.url');
like($meta->{resources}{bugtracker}{web} // '', qr{^https://\S+$},
	'META.json: resources.bugtracker.web');

# "make dist" is git archive of HEAD: the project's own test machinery stays
# out of it (.gitattributes export-ignore); sql/ and expected/, the
# isolation specs and the Perl TAP tests stay in for make installcheck
my $attributes = slurp('.gitattributes') // '';
foreach my $path ('.ci', 'test/run-all.sh', 'test/matrix.sh', 'test/lib.sh',
	'test/bench', 'test/cassert', 'test/ha', 'test/suites')
{
	like($attributes, qr{^/\Q$path\E\s+export-ignore\s*$}m,
		"make dist leaves out $path");
}
unlike($attributes, qr{^/(sql|expected|src|docs)\b.*export-ignore}m,
	'make dist keeps sql/, expected/, src/ and docs/');
unlike($attributes,
	qr{^/test(/(t|security|isolation))?/?\s+export-ignore}m,
	'make dist keeps test/t, test/security and test/isolation (make installcheck runs them)');
my $license = slurp('LICENSE') // '';
like($license, qr/^PostgreSQL License/, 'LICENSE is the PostgreSQL License');
like($license, qr/Copyright \(c\) \d{4}(-\d{4})?, schedlock developers/,
	'LICENSE: copyright schedlock developers');
like($license, qr/WITHOUT A WRITTEN AGREEMENT.*"AS IS"/si,
	'LICENSE has the grant and the disclaimer');

my $changelog = slurp('CHANGELOG.md') // '';
like($changelog, qr/^## \Q$default_version\E\b/m,
	"CHANGELOG.md has a section for $default_version");
like($changelog, qr/^## 1\.0\b/m, 'CHANGELOG.md has a section for 1.0');

# the update path: 1.0's install script, then upgrade scripts to the
# default version, one step at a time
ok(-f "$src/sql/schedlock--1.0.sql", 'sql/schedlock--1.0.sql exists');
my %next;
opendir(my $dh, "$src/sql") or die "sql: $!";
foreach my $f (readdir $dh)
{
	$next{$1} = $2 if $f =~ /^schedlock--([\d.]+)--([\d.]+)\.sql$/;
}
closedir $dh;
my ($v, @path) = ('1.0', '1.0');
while ($v ne $default_version && exists $next{$v} && @path < 100)
{
	$v = $next{$v};
	push @path, $v;
}
is($v, $default_version,
	'upgrade scripts lead from 1.0 to the default version (' . join(' -> ', @path) . ')');

# a fresh installation of the default version runs the base script, 1.2's,
# and the upgrade scripts after it: there is no install script of a later
# version, so that from 1.2 on a fresh database and an updated one are the
# same by construction.  (1.0's script is kept for CREATE EXTENSION ...
# VERSION '1.0'; the chain from it cannot be the fresh installation, as
# 1.0 created the job functions in the extension's schema, where an
# application's functions of those names would collide.)
opendir($dh, "$src/sql") or die "sql: $!";
my @installs = sort grep { /^schedlock--[\d.]+\.sql$/ } readdir $dh;
closedir $dh;
is(join(' ', @installs), 'schedlock--1.0.sql schedlock--1.2.sql',
	'install scripts of 1.0 and of the base 1.2 only: later versions install by the update chain');
my ($base_to_default, $w) = (1, '1.2');
while ($w ne $default_version && exists $next{$w} && $base_to_default < 100)
{
	$w = $next{$w};
	$base_to_default++;
}
is($w, $default_version, 'the update chain leads from the base 1.2 to the default version');
is($meta->{provides}{schedlock}{file}, 'sql/schedlock--1.2.sql',
	'META.json names the base install script');

# the map cannot drift: a src/ path named in the tree is a file or folder
# of the tree
my %missing;
my $named = 0;
find(
	{
		no_chdir => 1,
		wanted => sub {
			my $rel = substr($File::Find::name, length($src) + 1);
			if (-d $_)
			{
				$File::Find::prune = 1
				  if $rel =~ m{^test/bench/(results|out)$} || $rel =~ m{(^|/)tmp_};
				return;
			}
			return if $rel =~ m{^sql/schedlock--1\.0(--1\.1)?\.sql$};
			# builds PostgreSQL from its source: its src/ is PostgreSQL's
			return if $rel eq 'test/cassert/build.sh';
			return unless $rel =~ /\.(c|h|sql|spec|pl|pm|sh|md|out|conf|in)$/
			  || $rel =~ m{^test/[^.]+$};
			open(my $fh, '<', $_) or return;
			local $/;
			my $text = <$fh>;
			close $fh;
			while ($text =~ m{(?<![\w\$/.\-])(src/[A-Za-z0-9_./\-]*[A-Za-z0-9_])}g)
			{
				my $path = $1;
				$named++;
				$missing{$path} //= $rel unless -e "$src/$path";
			}
		}
	},
	map { "$src/$_" } grep { -d "$src/$_" } qw(docs expected sql src test));
cmp_ok($named, '>', 50, "the tree names src/ paths ($named)");
is(join(', ', map { "$_ (in $missing{$_})" } sort keys %missing), '',
	'every src/ path named in docs/, expected/, sql/, src/ and test/ exists');

# the include rule: a header of the file's own folder by its bare name, one
# of another folder by its path from src/ (only src/ is on the include
# path); and no include runs back up: src/base includes only src/base,
# src/cron and src/lock only src/base and themselves, and no file includes
# src/schedlock.c's folder level (the module entry)
my (@bad_includes, $project_includes);
my %may = (
	base => qr{^base/},
	cron => qr{^(base|cron)/},
	lock => qr{^(base|lock)/},
	sched => qr{^(base|cron|lock|sched)/},
	'' => qr{^(base|cron|lock|sched)/});
find(
	{
		no_chdir => 1,
		wanted => sub {
			return unless /\.[ch]$/;
			my $rel = substr($File::Find::name, length("$src/src") + 1);
			my ($dir) = $rel =~ m{^(.*)/[^/]+$};
			$dir //= '';
			my ($part) = $dir =~ m{^([^/]+)};
			$part //= '';
			open(my $fh, '<', $_) or return;
			while (my $line = <$fh>)
			{
				next unless $line =~ /^#include "([^"]+)"/;
				my $inc = $1;
				my $path;
				if ($inc !~ m{/})
				{
					my @ours = grep { -e "$src/src/$_/$inc" }
					  qw(base cron lock sched sched/store);
					if ($dir ne '' && -e "$src/src/$dir/$inc")
					{
						$path = "$dir/$inc";
					}
					elsif (@ours)
					{
						push @bad_includes,
						  "$rel: \"$inc\" is of src/$ours[0]: include it as \"$ours[0]/$inc\"";
						next;
					}
					else
					{
						next;			# PostgreSQL's
					}
				}
				elsif (-e "$src/src/$inc")
				{
					$path = $inc;
					push @bad_includes,
					  "$rel: \"$inc\" is of its own folder: include it by its bare name"
					  if $inc =~ m{^\Q$dir\E/[^/]+$};
				}
				else
				{
					next;				# PostgreSQL's
				}
				$project_includes++;
				push @bad_includes, "$rel: includes $path, above its part"
				  unless $path =~ $may{$part};
			}
			close $fh;
		}
	},
	"$src/src");
cmp_ok($project_includes // 0, '>', 100, "the C files include the project's headers ($project_includes)");
is(join("\n", @bad_includes), '',
	'every include of a project header names its folder unless it is of the same folder, and none runs back up');

# the window of table layouts is asked in one place: only the files of
# src/sched/store tell the tables' releases apart (SCHEDLOCK_TABLES_*, a
# capability struct's release, store_tables_current); the others read
# what the store can do
my (@layout_reads, $store_reads);
find(
	{
		no_chdir => 1,
		wanted => sub {
			return unless /\.[ch]$/;
			my $rel = substr($File::Find::name, length("$src/src") + 1);
			open(my $fh, '<', $_) or return;
			my $in_store = $rel =~ m{^sched/store/};
			while (my $line = <$fh>)
			{
				next unless $line =~ /\b(SCHEDLOCK_TABLES_1_\d+|SCHEDLOCK_TABLES_NONE|store_tables_current|->release\b)/;
				if ($in_store) { $store_reads++; next; }
				push @layout_reads, "$rel:$.: $1";
			}
			close $fh;
		}
	},
	"$src/src");
cmp_ok($store_reads // 0, '>', 5, "the store's files choose their statements by the tables' release ($store_reads places)");
is(join("\n", @layout_reads), '',
	'no file outside src/sched/store reads the release of the tables');

done_testing();
