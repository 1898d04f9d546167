import json, signal, sys
from collections import Counter


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout("timed out")


def _copy(x):
    t = type(x)
    if t is list:
        return [_copy(i) for i in x]
    if t is dict:
        return {k: _copy(v) for k, v in x.items()}
    return x


def _call(f, args):
    return repr(f(*_copy(args)))


def _lines(text):
    parts = text.split("\n")
    if parts and parts[-1] == "":
        parts.pop()
    return parts


def _norm(lines):
    out = []
    for line in lines:
        line = line.strip(" \t\n\r\v\f")
        if line:
            out.append(line)
    return "\n".join(out)


def _dir(files, d):
    pre = d + "/"
    return {k[len(pre):]: v for k, v in files.items() if k.startswith(pre)}


def _top(files, d):
    return {k: v for k, v in _dir(files, d).items() if "/" not in k}


def _tree_dirs(names, root):
    dirs = set()
    for n in names:
        parts = n.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            dirs.add("/".join(parts[:i]))
    return dirs


def m_count_lines_v1(f, p):
    return [str(f[p["FILE"]].count("\n"))]


def m_count_lines_v2(f, p):
    return [str(sum(c.count("\n") for n, c in _top(f, "logs").items() if n.endswith(".log")))]


def m_grep_count_v1(f, p):
    return [str(sum(1 for l in _lines(f[p["FILE"]]) if p["PATTERN"] in l))]


def m_grep_count_v2(f, p):
    w = p["WORD"].lower()
    return [str(sum(1 for l in _lines(f[p["FILE"]]) if w in l.lower()))]


def _ext_files(f, p):
    return sorted(n for n in _dir(f, "project") if n.rsplit("/", 1)[-1].endswith("." + p["EXT"]))


def m_find_ext_v1(f, p):
    return _ext_files(f, p)


def m_find_ext_v2(f, p):
    return [str(len(_ext_files(f, p)))]


def m_sort_unique_v1(f, p):
    return sorted(set(_lines(f[p["FILE"]])))


def m_sort_unique_v2(f, p):
    return [str(len(set(_lines(f[p["FILE"]]))))]


def m_csv_column_v1(f, p):
    i = int(p["IDX"]) - 1
    return [l.split(",")[i] for l in _lines(f[p["FILE"]])[1:]]


def m_csv_column_v2(f, p):
    return sorted(set(l.split(",")[3] for l in _lines(f[p["FILE"]])[1:]))


def m_csv_sum_v1(f, p):
    return [str(sum(int(l.split(",")[2]) for l in _lines(f[p["FILE"]])[1:]))]


def m_csv_sum_v2(f, p):
    s = {}
    for l in _lines(f[p["FILE"]])[1:]:
        parts = l.split(",")
        s[parts[1]] = s.get(parts[1], 0) + int(parts[2])
    return sorted("%s %d" % kv for kv in s.items())


def m_head_tail_v1(f, p):
    return _lines(f[p["FILE"]])[:int(p["N"])]


def m_head_tail_v2(f, p):
    return _lines(f[p["FILE"]])[-int(p["N"]):]


def m_word_count_v1(f, p):
    return [str(sum(len(c.split()) for n, c in _top(f, "docs").items() if n.endswith(".txt")))]


def m_word_count_v2(f, p):
    return [str(len(f[p["FILE"]].split()))]


def m_sed_replace_v1(f, p):
    return _lines(f[p["FILE"]].replace(p["OLD"], p["NEW"]))


m_sed_replace_v2 = m_sed_replace_v1


def m_rename_files_v1(f, p):
    return sorted(n[:-4] + ".md" if n.endswith(".txt") else n for n in _top(f, "notes"))


def m_rename_files_v2(f, p):
    return sorted(p["PREFIX"] + n if n.endswith(".log") else n for n in _top(f, "logs"))


def _archive(f, skip_log):
    names = ["project/" + n for n in _dir(f, "project")]
    dirs = _tree_dirs(names, "project")
    if skip_log:
        names = [n for n in names if not n.endswith(".log")]
    return sorted(set(names) | dirs)


def m_archive_dir_v1(f, p):
    return _archive(f, False)


def m_archive_dir_v2(f, p):
    return _archive(f, True)


def m_top_words_v1(f, p):
    c = Counter(f[p["FILE"]].split())
    ranked = sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))[:int(p["N"])]
    return ["%s %d" % kv for kv in ranked]


def m_top_words_v2(f, p):
    return [str(len(set(f[p["FILE"]].split())))]


def m_largest_file_v1(f, p):
    files = _top(f, "files")
    return [max(files, key=lambda n: len(files[n].encode()))]


def m_largest_file_v2(f, p):
    files = _top(f, "files")
    ranked = sorted(files, key=lambda n: -len(files[n].encode()))[:3]
    return ["%s %d" % (n, len(files[n].encode())) for n in ranked]


def m_count_files_v1(f, p):
    return [str(len(_dir(f, "tree")))]


def m_count_files_v2(f, p):
    return [str(len(_tree_dirs(list(_dir(f, "tree")), "")))]


def m_dedupe_lines_v1(f, p):
    seen, out = set(), []
    for l in _lines(f[p["FILE"]]):
        if l not in seen:
            seen.add(l)
            out.append(l)
    return out


def m_dedupe_lines_v2(f, p):
    c = Counter(_lines(f[p["FILE"]]))
    return sorted(l for l, n in c.items() if n == 1)


def m_case_convert_v1(f, p):
    return _lines(f[p["FILE"]].upper())


def m_case_convert_v2(f, p):
    return _lines(f[p["FILE"]].lower())


def m_status_codes_v1(f, p):
    c = Counter(l.split()[8] for l in _lines(f[p["FILE"]]))
    return ["%s %d" % kv for kv in sorted(c.items())]


def m_status_codes_v2(f, p):
    return sorted(set(l.split()[0] for l in _lines(f[p["FILE"]])))


def main():
    req = json.load(sys.stdin)
    codes = req.get("codes") or {}
    spaces = {}

    def fn_of(key, name):
        ns = spaces.get(key)
        if ns is None:
            ns = {"__name__": "solution"}
            exec(compile(codes[key], "<" + key + ">", "exec"), ns)
            spaces[key] = ns
        return ns[name]

    signal.signal(signal.SIGALRM, _alarm)
    kata = []
    for job in req.get("kata") or []:
        signal.setitimer(signal.ITIMER_REAL, 20.0)  # per task: a wrong implementation must not hang the batch
        try:
            ref = fn_of(job["ref"], job["fn"])
            wrongs = [fn_of(k, job["fn"]) for k in job.get("wrong", [])]
            res = {"args": [], "out": [], "wrong": [[] for _ in wrongs]}
            for args in job["cases"]:
                res["args"].append(", ".join(repr(a) for a in args))
                res["out"].append(_call(ref, args))
                for i, w in enumerate(wrongs):
                    try:
                        res["wrong"][i].append(_call(w, args))
                    except _Timeout:
                        raise
                    except BaseException as e:
                        res["wrong"][i].append("<error: %s>" % type(e).__name__)
            kata.append(res)
        except BaseException as e:
            kata.append({"error": "%s: %s: %s" % (job["ref"], type(e).__name__, e)})
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    shell = []
    g = globals()
    for job in req.get("shell") or []:
        try:
            model = g["m_" + job["model"].replace("/", "_")]
            shell.append({"out": _norm(model(job["files"], job["params"]))})
        except BaseException as e:
            shell.append({"error": "%s: %s: %s" % (job["model"], type(e).__name__, e)})
    sys.stdout.write(json.dumps({"kata": kata, "shell": shell}))


main()
