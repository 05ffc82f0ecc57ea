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
line's prefix, its numbers any) is '***', up to its END line or a line of another kind
(tests/unit/engines/test_log_pem_on_disk68b.py). A secret cut by a wrap is followed as LinesRedactor follows it
(errors.crossing spelled again in Perl over errors' expressions: _WHOLE_SHAPES, _RUN_SHAPES, _LEAD_SHAPES,
_AUTH_HEADER; and errors._keyed_crossing over _KEYED_RULES' expressions, a value cut from its key: '--api-key X',
"'api_key': 'X'", 'NAME=value'), each line read with the line after it, which it waits for
errors.HOLD_AHEAD_S at most (a quiet pipe still gets its last line written; tests/unit/engines/
test_host_filter_wraps_safety70.py). Differences left: Perl reads bytes, so its \\w, \\s and upper-casing are ASCII's (a
name or word in other letters next to a secret is read as Python would not).

It runs `perl`: perl-base is an Essential package on every Debian and Ubuntu image (a TPU VM's, the vllm/vllm-openai
image's: Debian Policy 3.8, `Essential: yes`); bash's `read` of a pipe takes one byte a syscall, 2 MB/s here (50 MB
in 24 s), and an engine printing faster blocked on its own log. A line ends at '\\r\\n' (one end), '\\n' or a '\\r'
alone (a progress bar's, which ends no line for minutes), so each update reaches the log as it comes, and each is
written '\\n' (log_summary.LINE_END is '\\n' for every reader); a '\\r' that ends what was read waits HOLD_AHEAD_S at
most for its '\\n'. `tr '\\r' '\\n'` did this before perl and made each CRLF two line ends: the empty line between a
wrap's two lines was read ahead instead of the second, and a token's rest reached the log
(tests/unit/engines/test_host_filter_crlf_qa70b.py). perl writes each line as the next comes, or HOLD_AHEAD_S after it
($| = 1). A last line without an end is written as it is.
"""

from __future__ import annotations

from onechip import errors

# Perl's program; its data, after __END__, one a line in the order the program reads them (_DATA)
_PROGRAM = r"""
$| = 1;
chomp(my $numbers = <DATA>);
my ($min, $span, $hold, $wholes, $runs, $leads) = split / /, $numbers;
my ($secret_name, $path_name, $named, $option, $word, $listed, $listed_value, $quoted, $assigned, $keyed_line,
    $keyed_header, $number, $secret_word, $several, $pem_begin, $pem_end, $pem_body,
    $key_words, $count_name, $any_shape, $auth, @shapes) = map { chomp; qr/$_/ } <DATA>;
my @whole = splice @shapes, 0, $wholes;
my @run = splice @shapes, 0, $runs;
my @lead = splice @shapes, 0, $leads;
my $run_at_start = qr/\A(\S{1,$span})/;  # errors._RUN_AT_START, at most $span of it
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
# errors.crossing: where a secret begun by the end of the line before and finished by this line starts in the former
# (undef: on this line, or none crosses) and how many characters of this line it takes
sub crossing {
    my ($before, $line) = @_;
    my ($at, @spans) = (length $before);
    # the run of characters the line before ends with ($before: $span at most), read from its end: /(\S+)\z/ is
    # tried from every character of the line (1.4 us a line of 100 bytes here, 0.4 so)
    my ($tail) = reverse($before) =~ /\A(\S+)/;
    my ($head) = $line =~ $run_at_start;
    my $joined = defined $tail && defined $head ? reverse($tail) . $head : '';
    my ($cut, @found) = (defined $tail ? length $tail : 0);
    my $offset = $at - $cut;
    for my $v (@values) {  # in the text across the cut, where a value of several words is whole
        my $n = length($v) - 1;
        my $from = $at > $n ? $at - $n : 0;
        my $i = index(substr($before, $from) . substr($line, 0, $n), $v);
        push @spans, [$from + $i, $from + $i + length $v] if $i >= 0;
    }
    # each shape where one of them is there only: searched on every line's ends where a value is known (HF_TOKEN),
    # they took 4 us a line here
    if ($joined ne '' && $joined =~ $any_shape) {
        for my $w (@whole) { push @found, [$-[0], $+[0]] while $joined =~ /$w/g; }
        for my $r (@run) {
            while ($joined =~ /$r/g) {
                my ($s, $e, $part) = ($-[0], $+[0], substr($joined, $-[0], $cut > $-[0] ? $cut - $-[0] : 0));
                push @found, [$s, $e] unless grep { $part =~ /\A(?:$_)\z/ } @whole;
            }
        }
        for my $l (@lead) {
            while ($joined =~ /$l/g) {
                push @spans, [$+[1] + $offset, $+[0] + $offset] if $-[0] < $cut && $cut <= $+[0];
            }
        }
    }
    push @spans, map { [$_->[0] + $offset, $_->[1] + $offset] } grep { $_->[0] < $cut && $cut < $_->[1] } @found;
    # $before is $span at most (the main loop keeps so much): the two joined, lower-cased once for the key words of
    # the keyed rules and the header's word
    my $both = $before . substr($line, 0, $span);
    my $low = lc $both;
    push @spans, keyed_crossing($both, $at) if $low =~ $key_words;
    my $wl = 'authorization';
    my $end = length $before > length $wl ? substr($before, -length $wl) : $before;
    my $at_word = $at < length $wl ? -1 : rindex($low, $wl, $at - length $wl);  # whole in $before
    if ($at_word < 0) {
        my $split = index($low, $wl, $at - length $end);
        $at_word = $split if $split >= 0 && $split < $at;
    }
    my $alone = $before;
    pos($alone) = $at_word if $at_word >= 0;
    if ($at_word >= 0 && (!($alone =~ /\G$auth/g) || $+[0] == $at)) {
        pos($both) = $at_word;
        push @spans, [$+[1], $+[0]] if $both =~ /\G$auth/g && $+[0] > $at;
    }
    return (undef, 0) unless @spans;
    my ($start, $taken) = (undef, 0);
    for (@spans) {
        $start = $_->[0] if $_->[0] < $at && (!defined $start || $_->[0] < $start);
        $taken = $_->[1] - $at if $_->[1] - $at > $taken;
    }
    return ($start, $taken);
}
# errors._KEYED_RULES: each rule that hides a value by its key, what its match is redacted to (read from the match
# variables as scrub reads them), and the texts of which one must be there for it to match (scrub's guards)
my @keyed = (
    [$named, sub { named_secret($1, $2, $&) }, '='],
    [$option, sub { option_secret($1, $2, $3, $4) }, '--'],
    [$listed, sub { listed_secret($&, $1, $2, $3) }, '--'],
    [$quoted, sub { quoted_secret($1, $2, $3, $4, $5, $6, $&) }, q(' ")],
    [$assigned, sub { assigned_secret($_[0], $-[0], $1, $&) }, q(=' =" =[)],
    [$number, sub { number_secret($_[0], $-[0], $1, $&) }, ': ='],
    [$keyed_line, sub { keyed_secret($&, $+{head}, $+{name}, $+{value}) }, ': ='],
    [$keyed_header, sub { keyed_secret($&, $+{head}, $+{name}, $+{value}) }, q(' ")],
);
sub same_start { my ($x, $y) = @_; return length((($x ^ $y) =~ /\A(\0*)/)[0]); }  # their common start's length
# errors._keyed_crossing: the values the keyed rules hide in the two joined whose match reaches across the cut
sub keyed_crossing {
    my ($joined, $at, @spans) = @_;  # the two joined, where the cut is
    for my $rule (@keyed) {
        my ($re, $hide, $needs) = @$rule;
        next unless grep { index($joined, $_) >= 0 } split / /, $needs;
        while ($joined =~ /$re/g) {
            my ($s, $e, $all) = ($-[0], $+[0], $&);
            next unless $s < $at && $at < $e;
            my $said = $hide->($joined);
            next if $said eq $all;
            my $lead = same_start($said, $all);
            $lead = length($said) - 3 if $lead > length($said) - 3;
            my $trail = same_start(scalar reverse($said), scalar reverse($all));
            $trail = length($said) - 3 - $lead if $trail > length($said) - 3 - $lead;
            my ($hidden, $until) = ($s + $lead, $e - $trail);
            my $quoted = substr($joined, $hidden > 0 ? $hidden - 1 : 0, $hidden > 0 ? 2 : 1) =~ /['"\[]/;
            next if $until <= $at || $quoted && $e == length $joined || $hidden < $at && !$quoted;
            my ($word) = substr($joined, $hidden) =~ /\A(\s*\S*)/;  # errors._FIRST_WORD
            push @spans, [$hidden, $quoted || $until < $hidden + length $word ? $until : $hidden + length $word];
        }
    }
    return @spans;
}
# the next line (its end kept, written "\n"), the rest at the input's end, or undef: at the end, or none whole within
# $_[0] seconds (one wait: a line read ahead is held no longer, errors.HOLD_AHEAD_S). A line ends at "\r\n" (one end:
# two made an empty line between a wrap's two lines, which was read ahead instead of the second), "\n", or a "\r"
# alone (a progress bar's, which ends no line for minutes: each update reaches the log as it comes); a "\r" that ends
# what was read waits for its "\n" at most $hold
my ($buf, $eof) = ('', 0);
sub next_line {
    my ($wait, $waited, $cr) = (shift, 0, 0);
    while (1) {
        # the first end, found by index (a match on $buf, /\r\n|\r(?!\z)|\n/, took 0.25 us a line more here); a '\r'
        # looked for before the first '\n' only where one is there (rindex reads back from it): not to the read's end
        my $n = index($buf, "\n");
        my $r = $n < 0 || rindex($buf, "\r", $n) >= 0 ? index($buf, "\r") : -1;
        my $at = $r >= 0 && ($n < 0 || $r < $n) ? $r : $n;
        if ($at >= 0 && ($at != $r || $r + 1 < length $buf || $eof || $cr)) {
            my $to = $at + ($at == $r && substr($buf, $r + 1, 1) eq "\n" ? 2 : 1);
            my $got = substr($buf, 0, $at);
            substr($buf, 0, $to, '');
            return $got . "\n";
        }
        return length $buf ? substr($buf, 0, length $buf, '') : undef if $eof;
        return undef if defined $wait && $waited++;
        my $limit = $buf =~ /\r\z/ ? $hold : $wait;
        if (defined $limit) {
            my $in = '';
            vec($in, fileno(STDIN), 1) = 1;
            unless (select($in, undef, undef, $limit)) {
                return undef unless $buf =~ /\r\z/;
                $cr = 1;
                next;
            }
        }
        my $n = sysread(STDIN, $buf, 65536, length $buf);
        $eof = 1 unless $n;
    }
}
# errors.LinesRedactor: the BEGIN line's prefix while in a private key's block (each body line '***'), as a pattern, its
# numbers any (errors._prefix_shape); the end of the line before, and the line read ahead with its crossing
my ($pem, $before, $ahead, @ahead_cross) = (undef, '');
my $line = next_line(undef);
while (defined $line) {
    my $following = next_line($hold);
    my $end = $line =~ s/\n\z// ? "\n" : '';
    (my $next = defined $following ? $following : '') =~ s/\n\z//;
    my ($shown, $rest, $done) = ('', $line, 0);
    if (defined $pem) {
        my $stop = $line =~ $pem_end ? $-[0] : undef;
        my $upto = defined $stop ? $stop : length $line;
        my $lead = $line =~ /\A$pem/ ? substr($line, 0, $+[0]) : undef;
        my $at = defined $lead ? length $lead : 0;
        my $body = $upto > $at ? substr($line, $at, $upto - $at) : '';
        if ($line eq '' || defined $lead && $body =~ /\A(?:$pem_body)\z/) {
            $shown = $line eq '' ? '' : scrub($lead) . ($body =~ /\S/ ? '***' : $body);
            if (defined $stop) { $rest = substr($line, $stop); } else { $done = 1; }
        }
        undef $pem unless $done;
    } else {
        my ($start, $cut) = defined $ahead && $ahead eq $line ? @ahead_cross : crossing($before, $line);
        ($shown, $rest) = ('***', substr($line, $cut)) if $cut;
    }
    if ($done) {
        ($before, $ahead) = ('', undef);
        print $shown, $end;
    } else {
        if (index($rest, '-----BEGIN') >= 0) {
            my ($from, $to);
            ($from, $to) = ($-[0], $+[0]) while $rest =~ /$pem_begin/g;
            my $after = defined $to ? substr($rest, $to) : undef;
            $pem = join '[0-9]+', map { quotemeta } split /[0-9]+/,
                substr($line, 0, length($line) - length($rest) + $from), -1
                if defined $after && $after !~ $pem_end && $after =~ /\A(?:$pem_body)\z/;
        }
        $before = length $line > $span ? substr($line, -$span) : $line;
        $ahead = defined $following ? $next : undef;
        @ahead_cross = defined $following ? crossing($before, $next) : (undef, 0);
        my $kept = length($rest) - length($before) + ($ahead_cross[0] // 0);
        if (defined $ahead_cross[0]) {
            print $shown, ($kept >= 0 ? scrub(substr($rest, 0, $kept)) . '***' : ''), $end;
        } else {
            print $shown, scrub($rest), $end;
        }
    }
    $line = defined $following ? $following : next_line(undef);
}
__END__
"""
# the least length of a value by name, the characters a wrapped secret is looked for in, the seconds a line is held
# for the next, how many whole, run and lead shapes there are (errors._WHOLE_SHAPES, _RUN_SHAPES, _LEAD_SHAPES: after
# the expressions named, before _SECRET_PATTERNS'), then the expressions
_DATA = [
    f"{errors.MIN_SECRET_CHARS} {errors.SECRET_SPAN_CHARS} {errors.HOLD_AHEAD_S} {len(errors._WHOLE_SHAPES)} "
    f"{len(errors._RUN_SHAPES)} {len(errors._LEAD_SHAPES)}",
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
    errors._ANY_SHAPE.pattern,
    errors._AUTH_HEADER.pattern,
    *(pattern.pattern for pattern in errors._WHOLE_SHAPES),
    *(pattern.pattern for pattern in errors._RUN_SHAPES),
    *(pattern.pattern for pattern in errors._LEAD_SHAPES),
    *(pattern.pattern for pattern in errors._SECRET_PATTERNS),
]
PERL_PROGRAM = _PROGRAM.lstrip("\n") + "".join(pattern.replace(r"\Z", r"\z") + "\n" for pattern in _DATA)

FILTER_FUNCTION = [
    "onechip_redact() {",
    "  perl /dev/fd/3 3<<'ONECHIP_PERL'",
    *PERL_PROGRAM.rstrip("\n").split("\n"),
    "ONECHIP_PERL",
    "}",
    # without perl no line of the engine's would reach its log, redacted or not: said there, and no engine started
    "command -v perl >/dev/null || { echo 'onechip: no perl on this host (Debian and Ubuntu: perl-base), which"
    " redacts the engine log; the engine was not started' >&2; exit 127; }",
]
