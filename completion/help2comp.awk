# Reads what `tftap COMMAND --help` prints and writes what the completion
# scripts need to know of that command, as shell assignments bash and zsh
# both read (completion/mkcomp.sh runs it once per command):
#   _tftap_o_CMD='--db=PATH --json -o=FILE --format=text|json|markdown ...'
#       its options; NAME=ARG when it takes a value, ARG an UPPERCASE
#       placeholder or the values it takes (lowercase, |-separated);
#   _tftap_p_CMD='RUN [ADDRESS|TYPE]'   its operands, as the synopsis names them;
#   _tftap_w_CMD='all'                  words another synopsis form starts with.
# Where they come from: the synopsis ("usage:" lines), the option list
# ("  --opt ARG   text"), and "--opt PLACEHOLDER" anywhere in the text (an
# option only named in the text may be another command's).

function strip(s) {
    gsub(/^[[(]+|[])]+$|\.\.\.$/, "", s)
    gsub(/[])]+$/, "", s)
    return s
}
function is_opt(s) { return s ~ /^-[a-z]$|^--[a-z][a-z-]*$/ }
function is_placeholder(s) { return s ~ /^[A-Z][A-Z_:]*$/ }
function is_enum(s) { return s ~ /^[a-z][a-z0-9]*(\|[a-z][a-z0-9]*)*$/ }
# The option list says best what an option takes (p 3), then the synopsis
# (2), then the text (1); the values it takes beat a placeholder.
function add_opt(name, arg, p) {
    if (!(name in opts)) {
        order[++nopts] = name
        opts[name] = ""
        prio[name] = 0
    }
    if (arg != "" && (opts[name] == "" || p > prio[name] || (is_enum(arg) && !is_enum(opts[name])))) {
        opts[name] = arg
        prio[name] = p
    }
}
# One synopsis form: its options, and (first form only) its operands.
function synopsis(s, first,    n, t, i, tok, name, next_tok, nt, closed, after_dashes) {
    n = split(s, t, / +/)
    after_dashes = 0
    for (i = 1; i <= n; i++) {
        tok = t[i]
        if (tok == "" || tok == "|")
            continue
        if (tok == "--") {
            after_dashes = 1
            continue
        }
        if (after_dashes)
            continue
        name = tok
        gsub(/^[[(]+/, "", name)
        closed = name ~ /[])]$/
        gsub(/[])]+$/, "", name)
        if (name ~ /\|/ && name ~ /^-/) {
            # (--resource|--data-source|...): alternatives, no value here.
            nt = split(name, alt, /\|/)
            for (j = 1; j <= nt; j++)
                if (is_opt(alt[j]))
                    add_opt(alt[j], "", 2)
            continue
        }
        if (is_opt(name)) {
            next_tok = (i < n) ? t[i + 1] : ""
            if (!closed && next_tok != "" && next_tok !~ /^[-[(|]/) {
                add_opt(name, strip(next_tok), 2)
                i++
            } else {
                add_opt(name, "", 2)
            }
            continue
        }
        if (!first) {
            if (i == 1 && name ~ /^[a-z]+$/)
                words = words (words == "" ? "" : " ") name
            continue
        }
        if (tok == "[options]")
            continue
        operands = operands (operands == "" ? "" : " ") tok
    }
}

BEGIN { nopts = 0; operands = ""; words = ""; forms = 0; in_usage = 0 }
/^usage: / {
    sub(cmd == "global" ? "^usage: +tftap *" : "^usage: +tftap +[a-z-]+ *", "")
    form[++forms] = $0
    in_usage = 1
    next
}
in_usage && /^ +tftap / {
    sub(cmd == "global" ? "^ +tftap *" : "^ +tftap +[a-z-]+ *", "")
    form[++forms] = $0
    next
}
in_usage && /^ +[^ ]/ {
    sub(/^ +/, "")
    form[forms] = form[forms] " " $0
    next
}
{ in_usage = 0 }
# The option list: "  -o, --output FILE   text" or "  --format a|b   text".
/^  -/ {
    line = substr($0, 3)
    if (match(line, /  +/))
        line = substr(line, 1, RSTART - 1)
    n = split(line, t, / +/)
    arg = (n >= 2 && !is_opt(t[n]) && t[n] !~ /,$/) ? t[n] : ""
    for (i = 1; i <= n; i++) {
        name = t[i]
        sub(/,$/, "", name)
        if (is_opt(name))
            add_opt(name, arg, 3)
    }
}
# "--opt PLACEHOLDER" in running text (mock's "-o FILE (--output FILE)").
{
    rest = $0
    while (match(rest, /--[a-z][a-z-]* [A-Z][A-Z_]*[ ),.;]/)) {
        split(substr(rest, RSTART, RLENGTH - 1), t, / /)
        add_opt(t[1], t[2], 1)
        rest = substr(rest, RSTART + RLENGTH)
    }
}
END {
    for (f = 1; f <= forms; f++)
        synopsis(form[f], f == 1)
    add_opt("--help", "", 0)
    out = ""
    for (i = 1; i <= nopts; i++)
        out = out (i > 1 ? " " : "") order[i] (opts[order[i]] == "" ? "" : "=" opts[order[i]])
    printf "_tftap_o_%s='%s'\n", cmd, out
    printf "_tftap_p_%s='%s'\n", cmd, operands
    printf "_tftap_w_%s='%s'\n", cmd, words
}
