# Turns the text `tftap [COMMAND] --help` prints into a man page, so that the
# manual and --help are one text and cannot drift (man/mkman.sh runs it).
#   awk -v page=tftap-run -v cmd=run -v version=0.1.0 -v summary=TEXT \
#       -v commands="decode run ..." -f help2man.awk HELP_TEXT
# The help text's layout, which every command's usage text follows:
#   "usage: tftap ..." lines (continued by indented lines): the synopsis;
#   unindented lines: paragraphs ("Exit status..." goes to EXIT STATUS);
#   "  TAG   text" (a gap of two or more spaces), continued by lines indented
#   deeper: a tagged item (OPTIONS, or COMMANDS in tftap(1));
#   "  text" without a gap: an indented paragraph (a lone one: an example);
#   "options:" / "commands:" alone: the section of the items that follow.

function esc(s) {
    gsub(/\\/, "\\e", s)
    gsub(/-/, "\\-", s)
    return s
}
# A text line as roff reads it: a leading . or ' would be a request.
function textline(s) {
    s = esc(s)
    if (s ~ /^[.']/)
        s = "\\&" s
    return s
}
# An item's tag: options in bold, PLACEHOLDERS in italics.
function tag(s,    n, w, i, out, word, punct) {
    n = split(s, w, / /)
    out = ""
    for (i = 1; i <= n; i++) {
        word = w[i]
        punct = ""
        if (word ~ /,$/) {
            punct = ","
            sub(/,$/, "", word)
        }
        if (word ~ /^-/ || (sect == "COMMANDS" && i == 1))
            word = "\\fB" esc(word) "\\fR"
        else if (word ~ /^[A-Z][A-Z_:|.]*$/)
            word = "\\fI" esc(word) "\\fR"
        else
            word = esc(word)
        out = out (i > 1 ? " " : "") word punct
    }
    if (out ~ /^[.']/)
        out = "\\&" out
    return out
}
function section(name) {
    if (sect != name)
        print ".SH " name
    sect = name
}
function flush_para() {
    if (para == "")
        return
    if (para ~ /^Exit status/) {
        section("EXIT STATUS")
        sub(/^Exit status[^:]*: */, "", para)
    } else if (sect != "DESCRIPTION" && sect != "OPTIONS" && sect != "COMMANDS") {
        section("DESCRIPTION")
    }
    print ".PP"
    print textline(para)
    para = ""
}
# The synopsis: one .SY block per "tftap ..." form; a bracketed group stays
# on one line.
function synopsis_text(s,    i, n, w, out, depth) {
    n = split(s, w, / +/)
    out = ""
    depth = 0
    lead = 1
    for (i = 1; i <= n; i++) {
        if (w[i] == "")
            continue
        # The command words lead, in bold.
        if (lead && w[i] ~ /^[a-z][a-z-]*$/) {
            out = out (out == "" ? "" : " ") "\\fB" esc(w[i]) "\\fR"
            continue
        }
        lead = 0
        out = out (out == "" ? "" : (depth > 0 ? "\\ " : " ")) esc(w[i])
        depth += gsub(/\[/, "[", w[i]) + gsub(/\(/, "(", w[i])
        depth -= gsub(/\]/, "]", w[i]) + gsub(/\)/, ")", w[i])
    }
    return out
}
function flush_item() {
    if (item_tag == "" && item_text == "")
        return
    if (item_tag != "") {
        print ".TP"
        print tag(item_tag)
        print textline(item_text)
    } else if (item_lines == 1 && lone) {
        print ".PP"
        print ".RS"
        print ".EX"
        print textline(item_text)
        print ".EE"
        print ".RE"
    } else {
        print ".IP"
        print textline(item_text)
    }
    item_tag = item_text = ""
    item_lines = 0
}

BEGIN {
    sect = ""
    para = ""
    nsyn = 0
    in_usage = 0
    up = toupper(page)
    gsub(/-/, "\\-", up)
    print ".\\\" Generated from `tftap" (cmd == "" ? "" : " " cmd) " --help` by man/help2man.awk: do not edit."
    print ".TH " up " 1 \"\" \"tftap " version "\" \"tftap manual\""
    print ".SH NAME"
    print esc(page) " \\- " esc(summary)
    prev_blank = 1
}

/^usage: / {
    sub(/^usage: +tftap */, "")
    syn[++nsyn] = $0
    in_usage = 1
    next
}
in_usage && /^ +tftap / {
    sub(/^ +tftap */, "")
    syn[++nsyn] = $0
    next
}
in_usage && /^ +[^ ]/ {
    # A synopsis continued on the next line.
    syn[nsyn] = syn[nsyn] " " $0
    next
}
in_usage {
    in_usage = 0
    print ".SH SYNOPSIS"
    for (i = 1; i <= nsyn; i++) {
        print ".SY tftap"
        print synopsis_text(syn[i])
        print ".YS"
    }
    sect = "SYNOPSIS"
}

/^$/ {
    if (item_lines == 1 && item_tag == "" && prev_blank_before_item)
        lone = 1
    flush_item()
    lone = 0
    flush_para()
    prev_blank = 1
    next
}
/^[a-z]+:$/ {
    flush_item()
    flush_para()
    section(toupper(substr($0, 1, length($0) - 1)))
    prev_blank = 0
    next
}
# An item continued: indented deeper than its first line.
/^    +[^ ]/ && (item_tag != "" || item_text != "") {
    line = $0
    sub(/^ +/, "", line)
    item_text = item_text (item_text == "" ? "" : " ") line
    item_lines++
    prev_blank = 0
    next
}
/^  [^ ]/ {
    flush_item()
    flush_para()
    line = substr($0, 3)
    if (match(line, /  +/)) {
        item_tag = substr(line, 1, RSTART - 1)
        item_text = substr(line, RSTART + RLENGTH)
        if (sect != "COMMANDS" && item_tag ~ /^-/)
            section("OPTIONS")
    } else {
        item_text = line
        if (sect == "SYNOPSIS" || sect == "")
            section("DESCRIPTION")
    }
    item_lines = 1
    prev_blank_before_item = prev_blank
    prev_blank = 0
    next
}
{
    flush_item()
    line = $0
    para = para (para == "" ? "" : " ") line
    prev_blank = 0
}

END {
    flush_item()
    flush_para()
    print ".SH SEE ALSO"
    if (cmd != "") {
        print "\\fBtftap\\fR(1)"
        exit
    }
    n = split(commands, c, / /)
    for (i = 1; i <= n; i++)
        print "\\fBtftap\\-" esc(c[i]) "\\fR(1)" (i < n ? "," : "")
    exit
}
