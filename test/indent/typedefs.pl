#!/usr/bin/perl
# test/indent/typedefs.pl FILE... : print, sorted and one a line, the names
# that the C files given declare with typedef (structs, enums and unions by
# the name after their closing brace, function pointers by the name in
# "(*name)", the rest by their last word).  test/suites/indent.sh compares
# the output with test/indent/typedefs.list, which pgindent is given beside
# PostgreSQL's own list.
use strict;
use warnings;

my %names;
for my $file (@ARGV)
{
	open(my $fh, '<', $file) or die "$file: $!";
	local $/;
	my $text = <$fh>;
	close $fh;
	$text =~ s{/\*.*?\*/}{}gs;
	$text =~ s{//[^\n]*}{}g;
	while ($text =~ /\btypedef\b/g)
	{
		my $start = pos($text);
		my ($depth, $i) = (0, $start);
		for (; $i < length($text); $i++)
		{
			my $c = substr($text, $i, 1);
			$depth++ if $c eq '{';
			$depth-- if $c eq '}';
			last if $c eq ';' && $depth == 0;
		}
		my $body = substr($text, $start, $i - $start);
		my $name;
		if ($body =~ /\{/)
		{
			($name) = substr($body, rindex($body, '}') + 1) =~ /(\w+)\s*$/;
		}
		elsif ($body =~ /\(\s*\*\s*(\w+)\s*\)/)
		{
			$name = $1;
		}
		else
		{
			($name) = $body =~ /(\w+)\s*(?:\[[^\]]*\]\s*)*$/;
		}
		$names{$name} = 1 if defined $name;
		pos($text) = $i;
	}
}
print "$_\n" for sort keys %names;
