"""The redacting filter an engine's output goes through where no onechip runs: a host's serve.sh (engines.remote), as
bash lines. Its Python twin is onechip.logpump, a local engine's. A container's own log (`docker logs`) does not go
through it (README: what remains).

It redacts a line as errors.redact does, by the same rules: the patterns are errors' own compiled expressions, written
into the program as its data (Python's `re` and Perl's read them alike: the one spelling Perl's differs in, the end of
the text `\\Z`, is written `\\z`), and the few lines of logic around them (errors.secret_named, names_a_path,
_option_secret, _word_hidden, _quoted_secret, _assigned_secret, _keyed_secret) are spelled again in Perl below; a test
feeds one table of lines through both (tests/unit/engines/test_host_log_filter_agrees66.py). A secret is the value
(errors.MIN_SECRET_CHARS or more) of an environment variable whose name says one (errors.SECRET_NAME: HF_TOKEN, sourced
from the 0600 hf_token.env; VLLM_API_KEY) but for one naming a file's path, a shape (errors._SECRET_PATTERNS: hf_...,
sk-..., a bearer header, ...) and a value named as one (NAME=value, --api-key X, api_key='X', "api_key": "X", a line
'X-Api-Key: X'). The
values are read from the environment by the program itself: never an argv (`ps`), never a file. The lines are read in
order with errors.LinesRedactor's PEM state: after a private key's BEGIN line each line of its body (with the BEGIN
line's prefix) is '***', up to its END line or a line of another kind (tests/unit/engines/test_log_pem_on_disk68b.py).
Differences left: Perl reads bytes, so its \\w and upper-casing are ASCII's (a name or word in other letters next to a
secret is read as Python would not); a secret cut by a wrap (LinesRedactor's other state) is not followed here.

It runs `tr` then `perl`: coreutils and perl-base are Essential packages on every Debian and Ubuntu image (a TPU VM's,
the vllm/vllm-openai image's: Debian Policy 3.8, `Essential: yes`); bash's `read` of a pipe takes one byte a syscall,
2 MB/s here (50 MB in 24 s), and an engine printing faster blocked on its own log. A '\\r' (a progress bar's, which ends
no line for minutes) becomes a line end, so each update reaches the log as it comes (log_summary.LINE_END is '\\n' for
every reader); `stdbuf` (coreutils) makes tr write at once, where it is missing the output goes by its blocks, never
lost; perl writes each line as it ends ($| = 1). A last line without an end is written as it is.
"""

from __future__ import annotations

from onechip import errors

# Perl's program; its data, after __END__, one a line in the order the program reads them (_DATA)
_PROGRAM = r"""
$| = 1;
chomp(my $min = <DATA>);
my ($secret_name, $path_name, $named, $option, $word, $listed, $listed_value, $quoted, $assigned, $keyed_line,
    $keyed_header, $number, $secret_word, $several, $pem_begin, $pem_end, $pem_body,
    $key_words, $count_name, @shapes) = map { chomp; qr/$_/ } <DATA>;
sub secret_named { (my $w = uc $_[0]) =~ tr/-/_/; return $w =~ $secret_name && $w !~ $path_name; }
sub names_a_path {
    my ($name, $v) = @_;
    return 0 if uc($name) !~ $path_name || $v eq '' || $v =~ /\s|[\@:]/ || $v =~ /^\{/;
    my ($slash, $file) = $v =~ m{(?:(.*/))?([^/]*)\z}s;
    $file =~ s/^\.+|\.+\z//g;
    return $v =~ m{^(?:/|~/|\./|\.\./)} || (defined $slash && index($file, '.') >= 0);
}
my @values = sort { length $b <=> length $a } grep { defined } map {
    my $v = $ENV{$_};
    uc($_) =~ $secret_name && length($v) >= $min && !names_a_path($_, $v) && $v !~ /\n/ ? $v : undef
} keys %ENV;
my $known = @values ? join('|', map { quotemeta } @values) : undef;
sub options { my $t = shift; $t =~ s/$option/option_secret($1, $2, $3, $4)/ge; return $t; }
sub option_secret {
    my ($head, $name, $sep, $values) = @_;
    return $head . options($values) unless secret_named($name);
    (my $dest = uc $name) =~ tr/-/_/;
    $values =~ /^$word/;
    my $first = $&;
    my ($words, $rest) = ($dest =~ $several && $sep ne '=') ? ($values, '') : ($first, substr($values, length $first));
    $words =~ s/$word/word_hidden($&, $dest)/ge;
    return $head . $words . options($rest);
}
sub word_hidden {
    my ($w, $dest) = @_;
    (my $s = $w) =~ s{^[\[\]]+|[\[\]]+\z}{}g;
    return $w if $s eq $dest || $s eq '...';
    my $tail = $w !~ /\[/ && $w =~ /[^\]](\]+)\z/ ? $1 : '';
    return '***' . $tail;
}
sub listed_secret {
    my ($all, $head, $name, $items) = @_;
    return $all unless secret_named($name);
    (my $dest = uc $name) =~ tr/-/_/;
    my $seen = 0;
    $items =~ s{$listed_value}{
        my ($sep, $q) = ($1, $2);
        (my $s = substr($q, 1, -1)) =~ s/^[\[\]]+|[\[\]]+\z//g;
        my $kept = ++$seen > 1 && $dest !~ $several || $s eq $dest || $s eq '...';
        $kept ? "$sep$q" : $sep . substr($q, 0, 1) . '***' . substr($q, -1)
    }ge;
    return $head . $items;
}
sub quoted_secret {
    my @match = @_;  # copied: a match in secret_named sets $1 and $& anew
    my ($head, $name) = defined $match[0] ? @match[0, 1] : defined $match[2] ? @match[2, 3] : @match[4, 5];
    return secret_named($name) ? "$head***" : $match[6];
}
sub keyed_secret {
    my ($all, $head, $name, $value) = @_;  # copied, as quoted_secret's
    return $all unless secret_named($name);
    my $quote = $value =~ /^["']/ ? substr($value, 0, 1) : '';
    return "$head$quote***$quote";
}
sub assigned_secret {
    my ($orig, $start, $head, $all) = @_;
    my ($name) = substr($orig, 0, $start) =~ /([A-Za-z0-9_.-]*)\z/;
    return $name ne '' && secret_named($name) ? "$head***" : $all;
}
sub number_secret {
    my ($orig, $at, $head, $all) = @_;  # the key read back from the match's start, as _numbered_secret reads it
    my $end = $at;
    $end-- while $end && substr($orig, $end - 1, 1) =~ /[ \t]/;
    my $quote = $end && substr($orig, $end - 1, 1) =~ /["']/ ? substr($orig, $end - 1, 1) : '';
    $end -= length $quote;
    my $start = $end;
    $start-- while $start && substr($orig, $start - 1, 1) =~ /[A-Za-z0-9_.-]/;
    my $name = substr($orig, $start, $end - $start);
    return $all if $quote ne '' && ($start == 0 || substr($orig, $start - 1, 1) ne $quote);
    (my $w = uc $name) =~ tr/-/_/;
    my $secret = $name ne '' && secret_named($name) && $w =~ $secret_word && $w !~ $count_name;
    return $secret ? "$head$quote***$quote" : $all;
}
sub named_secret {
    my ($head, $name, $all) = @_;  # errors._named_secret: a number under a name that counts is shown
    my $counted = substr($all, length $head) =~ /\A[0-9]+\z/ && $name =~ $count_name;
    return $name =~ $secret_name && !$counted ? "$head***" : $all;
}
sub scrub {
    my $line = shift;
    $line =~ s/$known/***/g if defined $known;
    $line =~ s/$_/(defined $1 ? $1 : '') . '***'/ge for @shapes;
    $line =~ s/$named/named_secret($1, $2, $&)/ge;
    # lower-cased, not /i: a case-blind alternation is tried at each character (3.8 s of user time for a 50 MB log
    # of 515,463 lines, 1.1 s so; measured here)
    if (lc($line) =~ $key_words) {
        if (index($line, '--') >= 0) {
            $line = options($line);
            $line =~ s/$listed/listed_secret($&, $1, $2, $3)/ge if $line =~ /['"]/;
        }
        if ($line =~ /['"]/) {
            $line =~ s/$quoted/quoted_secret($1, $2, $3, $4, $5, $6, $&)/ge;
            my $orig = $line;
            $line =~ s/$assigned/assigned_secret($orig, $-[0], $1, $&)/ge if $line =~ /=['"\[]/;
        }
        if ($line =~ /[:=]/) {
            my $orig = $line;
            $line =~ s/$number/number_secret($orig, $-[0], $1, $&)/ge;
            $line =~ s/$keyed_line/keyed_secret($&, $+{head}, $+{name}, $+{value})/ge;
            $line =~ s/$keyed_header/keyed_secret($&, $+{head}, $+{name}, $+{value})/ge if $line =~ /['"]/;
        }
    }
    return $line;
}
# errors.LinesRedactor's PEM state: the BEGIN line's prefix while in a private key's block, each body line '***'
my $pem;
while (my $line = <STDIN>) {
    my $end = $line =~ s/\n\z// ? "\n" : '';
    my ($shown, $rest) = ('', $line);
    if (defined $pem) {
        my $stop = $line =~ $pem_end ? $-[0] : undef;
        my $upto = defined $stop ? $stop : length $line;
        my $body = $upto > length $pem ? substr($line, length $pem, $upto - length $pem) : '';
        if ($line eq '' || substr($line, 0, length $pem) eq $pem && $body =~ /\A(?:$pem_body)\z/) {
            $shown = $line eq '' ? '' : scrub($pem) . ($body =~ /\S/ ? '***' : $body);
            if (!defined $stop) { print $shown, $end; next; }
            $rest = substr($line, $stop);
        }
        undef $pem;
    }
    if (index($rest, '-----BEGIN') >= 0) {
        my ($from, $to);
        ($from, $to) = ($-[0], $+[0]) while $rest =~ /$pem_begin/g;
        my $after = defined $to ? substr($rest, $to) : undef;
        $pem = substr($line, 0, length($line) - length($rest) + $from)
            if defined $after && $after !~ $pem_end && $after =~ /\A(?:$pem_body)\z/;
    }
    print $shown, scrub($rest), $end;
}
__END__
"""
# the least length of a value by name, then the expressions
_DATA = [
    str(errors.MIN_SECRET_CHARS),
    errors.SECRET_NAME.pattern,
    errors._PATH_NAME.pattern,
    errors._NAMED_VALUE.pattern,
    errors._SECRET_OPTION.pattern,
    errors._OPTION_WORD.pattern,
    errors._LISTED_OPTION.pattern,
    errors._LISTED_VALUE.pattern,
    errors._QUOTED_VALUE.pattern,
    errors._ASSIGNED_VALUE.pattern,
    errors._KEYED_LINE.pattern,
    errors._KEYED_HEADER.pattern,
    errors._NUMBER_VALUE.pattern,
    errors._SECRET_WORD.pattern,
    "^(?:" + "|".join(sorted(errors._SEVERAL_VALUES)) + ")$",
    errors._PEM_BEGIN.pattern,
    errors._PEM_END.pattern,
    errors._PEM_BODY.pattern,
    "|".join(errors._KEY_WORDS),  # lower-case words: redactor's guard, which the program asks of the line lower-cased
    errors._COUNT_NAME.pattern,
    *(pattern.pattern for pattern in errors._SECRET_PATTERNS),
]
PERL_PROGRAM = _PROGRAM.lstrip("\n") + "".join(pattern.replace(r"\Z", r"\z") + "\n" for pattern in _DATA)

FILTER_FUNCTION = [
    "onechip_redact() {",
    '  command -v stdbuf >/dev/null || stdbuf() { shift; "$@"; }',
    "  stdbuf -o0 tr '\\r' '\\n' | perl /dev/fd/3 3<<'ONECHIP_PERL'",
    *PERL_PROGRAM.rstrip("\n").split("\n"),
    "ONECHIP_PERL",
    "}",
    # without perl no line of the engine's would reach its log, redacted or not: said there, and no engine started
    "command -v perl >/dev/null || { echo 'onechip: no perl on this host (Debian and Ubuntu: perl-base), which"
    " redacts the engine log; the engine was not started' >&2; exit 127; }",
]
