#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Reads every command's --help and the man page, and checks one against the other.

  check_cli.py shorts SPECPROBE        a short option means one long option in every
      command, and a long option has the same short one (or none) everywhere
  check_cli.py man SPECPROBE MANPAGE   the commands, each command's options and top's
      keys are the same in --help and in the man page
  check_cli.py reference SPECPROBE REFERENCE   each command's options of --help are in
      REFERENCE's "Options" (its own line, or a group that names it), and no others
  check_cli.py refusals SPECPROBE SCRATCH DOC...   no doc says that a combination the
      command line takes is refused (each is tried: it is no usage error)
  check_cli.py wrap SPECPROBE          no --help breaks a line mid-phrase: a paragraph
      is filled to the margin, an example is never wrapped, -V is listed
"""
import os
import re
import subprocess
import sys

# an option line of argp's help: "  -d, --duration=DURATION   ..." or "      --batch  ..."
HELP_OPTION = re.compile(r'^ {2,6}(?:-(\S), )?--([a-z][a-z0-9-]*)')
# a command line of specprobe --help: "  record   record calls ..."
HELP_COMMAND = re.compile(r'^  ([a-z]+) {2,}\S')
# an option in a man page tag once roff is taken out: -x or --long-name
MAN_OPTION = re.compile(r'(?<![\w-])(?:-([A-Za-z?])|--([a-z][a-z0-9-]*))(?![\w-])')


def run_help(specprobe, *args):
    out = subprocess.run([specprobe, *args, '--help'], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f'{" ".join(args) or "specprobe"} --help: exit {out.returncode}: '
                 f'{out.stderr.strip()}')
    return out.stdout


def commands(specprobe):
    return [m.group(1) for line in run_help(specprobe).splitlines()
            if (m := HELP_COMMAND.match(line))]


def help_options(text):
    """{(short or '', long)} of one command's --help."""
    return {(m.group(1) or '', m.group(2)) for line in text.splitlines()
            if (m := HELP_OPTION.match(line))}


def check_shorts(specprobe):
    by_short, by_long, problems = {}, {}, []
    for cmd in commands(specprobe):
        for short, long in help_options(run_help(specprobe, cmd)):
            if short:
                by_short.setdefault(short, {}).setdefault(long, []).append(cmd)
            by_long.setdefault(long, {}).setdefault(short, []).append(cmd)
    for short, longs in sorted(by_short.items()):
        if len(longs) > 1:
            problems.append(f'-{short} means ' + ', '.join(
                f'--{lng} in {"/".join(cmds)}' for lng, cmds in sorted(longs.items())))
    for long, shorts in sorted(by_long.items()):
        if len(shorts) > 1:
            problems.append(f'--{long} is ' + ', '.join(
                f'{"-" + s if s else "long only"} in {"/".join(cmds)}'
                for s, cmds in sorted(shorts.items())))
    if problems:
        print('; '.join(problems))
        return 1
    print(f'{len(by_short)} short options, {len(by_long)} long ones, one meaning each')
    return 0


def deroff(line):
    """A roff line as text: no request name, quotes, font escapes; \\- as -."""
    line = re.sub(r'^\.[A-Z]+\s*', '', line)
    line = re.sub(r'\\f[BIRP]', '', line).replace('\\-', '-').replace('"', '')
    return line


def man_blocks(path):
    """{heading: (tags, text)}: each .SH and .SS block's .TP tag lines and its text."""
    blocks, name = {}, None
    lines = open(path).read().splitlines()
    for i, line in enumerate(lines):
        m = re.match(r'^\.(SH|SS)\s+"?([^"]*)"?$', line)
        if m:
            name = m.group(2).strip() if m.group(1) == 'SH' else 'command ' + m.group(2)
            blocks[name] = ([], [])
        elif name and line.startswith('.TP') and i + 1 < len(lines):
            blocks[name][0].append(deroff(lines[i + 1]))
        elif name:
            blocks[name][1].append(deroff(line))
    return blocks


def tag_options(tags):
    """{(short or '', long)} of .TP tags: a tag's short option pairs with its long one."""
    opts = set()
    for tag in tags:
        found = MAN_OPTION.findall(tag)
        shorts = [s for s, _ in found if s]
        longs = [lng for _, lng in found if lng]
        if longs:
            opts.add((shorts[0] if shorts else '', longs[0]))
        elif shorts:
            opts.add((shorts[0], ''))
    return opts


def man_options(blocks, cmd):
    """A command's options in the man page: its own, COMMON OPTIONS and the groups it names."""
    tags, text = blocks[f'command {cmd}']
    opts = tag_options(tags) | tag_options(blocks.get('COMMON OPTIONS', ([], []))[0])
    body = ' '.join(text)
    for name, (group_tags, _) in blocks.items():
        if name.endswith(' OPTIONS') and name != 'COMMON OPTIONS' and name in body:
            opts |= tag_options(group_tags)
    return opts


def help_keys(text):
    """Top's keys from its --help: 'Keys: q quit, p pause, ..., ? help.'"""
    m = re.search(r'Keys: (.*?)\.\n', text, re.S)
    if not m:
        sys.exit('top --help names no keys')
    keys = re.sub(r'\([^)]*\)', '', m.group(1).replace('\n', ' '))
    return {part.split()[0] for part in keys.split(', ')}


def check_man(specprobe, manpage):
    blocks, problems = man_blocks(manpage), []
    cmds = commands(specprobe)
    documented = {n.split(' ', 1)[1] for n in blocks if n.startswith('command ')}
    for cmd in sorted(set(cmds) - documented):
        problems.append(f'{cmd}: no ".SS {cmd}" in the man page')
    for cmd in sorted(documented - set(cmds)):
        problems.append(f'{cmd}: in the man page, not a command')
    total = 0
    for cmd in cmds:
        if cmd not in documented:
            continue
        helped, manned = help_options(run_help(specprobe, cmd)), man_options(blocks, cmd)
        total += len(helped)
        for short, long in sorted(helped - manned):
            problems.append(f'{cmd}: {"-" + short + ", " if short else ""}--{long} '
                            'of --help is not in the man page')
        for short, long in sorted(manned - helped):
            problems.append(f'{cmd}: {"-" + short + ", " if short else ""}--{long} '
                            'of the man page is not in --help')
    key_words = set(' '.join(blocks.get('TOP KEYS', ([], []))[0]).replace(',', ' ').split())
    keys = help_keys(run_help(specprobe, 'top'))
    for key in sorted(keys - key_words):
        problems.append(f'top: key {key} of --help is not in the man page\'s TOP KEYS')
    if problems:
        print('; '.join(problems))
        return 1
    print(f'{len(cmds)} commands, {total} options and {len(keys)} keys of top alike '
          'in --help and the man page')
    return 0


def reference_options(path, cmds):
    """{command: {(short, long)}} of the reference's Options: own lines and named groups."""
    text = open(path).read()
    m = re.search(r'^### Options\n(.*?)^###? ', text, re.M | re.S)
    if not m:
        sys.exit(f'{path}: no "### Options" section')
    own, shared = {}, []
    for item in re.split(r'^- ', m.group(1), flags=re.M)[1:]:
        item = item.replace('\n', ' ')
        opts = set()
        for code in re.findall(r'`([^`]*)`', item):
            for pair in re.findall(r'(?<![\w-])-([A-Za-z])`/`--([a-z][a-z0-9-]*)', item):
                opts.add(pair)
            for short, long in MAN_OPTION.findall(code):
                if long and not any(lng == long for _, lng in opts):
                    opts.add(('', long))
                elif short and not any(s == short for s, _ in opts):
                    opts.add((short, ''))
        head = re.match(r'`([a-z]+)`:', item)
        if head:
            own[head.group(1)] = opts
        else:
            named = re.match(r'\*\*([^*]*)\*\*\s*(\([^)]*\))?', item)
            users = re.findall(r'`([a-z]+)`', named.group(2) or '') if named else []
            shared.append((users if users else cmds, opts))
    return {cmd: own.get(cmd, set()).union(*[o for users, o in shared if cmd in users])
            for cmd in cmds if cmd in own}


def check_reference(specprobe, path):
    cmds, problems, total = commands(specprobe), [], 0
    documented = reference_options(path, cmds)
    for cmd in cmds:
        if cmd not in documented:
            problems.append(f'{cmd}: no "- `{cmd}`:" line in the reference\'s Options')
            continue
        helped = help_options(run_help(specprobe, cmd))
        total += len(helped)
        for short, long in sorted(helped - documented[cmd]):
            problems.append(f'{cmd}: {"-" + short + "/" if short else ""}--{long} of --help '
                            'is not in the reference')
        for short, long in sorted(documented[cmd] - helped):
            problems.append(f'{cmd}: {"-" + short + "/" if short else ""}--{long} of the '
                            'reference is not in --help')
    if problems:
        print('; '.join(problems))
        return 1
    print(f'{len(cmds)} commands, {total} options alike in --help and the reference')
    return 0


# Combinations the command line takes, with the words a doc would name them by; each
# is tried with a pid that is no process: the run fails past the options, never exit 2.
TAKEN = [
    (['record', '--gpu', '-p', '{pid}', '-o', '{scratch}/gpu.sprb'], '--gpu', '-p'),
    (['report', '--gpu', '-p', '{pid}', '-o', '{scratch}/gpu.sprb'], '--gpu', '-p'),
    (['top', '--gpu', '--batch', '-n', '1', '-p', '{pid}'], '--gpu', '-p'),
    (['record', '--server-metrics', 'http://127.0.0.1:1/metrics', '-p', '{pid}'],
     '--server-metrics', '-p'),
    (['top', '--server-metrics', 'http://127.0.0.1:1/metrics', '-p', '{pid}'],
     '--server-metrics', '-p'),
    (['record', '-p', '{pid}'], 'record', 'without -o'),
]
REFUSAL = re.compile(r'refused|not (?:yet )?(?:supported|taken)|needs -- CMD|only with -- CMD'
                     r'|for now|is required', re.I)


def man_units(path):
    """A man page's paragraphs, each led by what it is about: its .TP tag or its heading."""
    units, head, cur = [], '', None
    lines = open(path).read().splitlines()
    for i, line in enumerate(lines):
        m = re.match(r'^\.(SH|SS)\s+"?([^"]*)"?$', line)
        if m or line.startswith(('.TP', '.PP')):
            if cur:
                units.append(cur)
            head = m.group(2) if m else head
            cur = head + ': ' if m or line.startswith('.PP') else None
        elif cur is None:
            cur = deroff(line) + ': '    # the line after .TP: its tag
        else:
            cur += deroff(line) + ' '
    return units + ([cur] if cur else [])


def md_units(path):
    """A Markdown file's paragraphs, list items and table rows."""
    units, cur = [], ''
    for line in open(path).read().splitlines():
        if not line.strip() or line.startswith(('|', '#', '- ', '```')) or \
                re.match(r'^\d+\. ', line):
            if cur:
                units.append(cur)
            cur = ''
        cur += line.strip() + ' '
    return units + ([cur] if cur else [])


def doc_sentences(path):
    """A doc's sentences; a man page's each led by its tag or heading."""
    if path.endswith('.1'):
        return [unit.split(': ', 1)[0] + ': ' + sentence for unit in man_units(path)
                for sentence in re.split(r'(?<=\.)\s+', unit)]
    return [sentence for unit in md_units(path)
            for sentence in re.split(r'(?<=[.!?])\s+', unit)]


def says_refused(sentence, first, second):
    plain = sentence.replace('`', '')
    return (REFUSAL.search(plain) and re.search(r'(?<![\w-])' + re.escape(first) +
                                                 r'(?![\w-])', plain)
            and second.split()[-1] in plain)


def check_refusals(specprobe, scratch, docs):
    problems = []
    with open('/proc/sys/kernel/pid_max') as f:
        pid = f.read().strip()     # pids are below it: no process has it
    for args, first, second in TAKEN:
        argv = [a.format(pid=pid, scratch=scratch) for a in args]
        out = subprocess.run([os.path.abspath(specprobe), *argv], capture_output=True, text=True, timeout=60,
                             cwd=scratch)
        if out.returncode == 2:
            problems.append(f'{" ".join(argv)}: a usage error: {out.stderr.strip()[:120]}')
            continue
        for doc in docs:
            for sentence in doc_sentences(doc):
                if says_refused(sentence, first, second):
                    problems.append(f'{doc}: says {first} with {second} is refused, and '
                                    f'"{" ".join(args[:2])} ... {second}" is taken: '
                                    f'"{sentence.strip()[:140]}"')
    if problems:
        print('; '.join(problems))
        return 1
    print(f'{len(TAKEN)} combinations taken by the command line, none said refused in '
          f'{len(docs)} docs')
    return 0


RMARGIN = 79    # argp's right margin


def wrap_problems(name, text):
    """Lines of one --help that argp wrapped in a phrase or that the doc broke early."""
    problems, lines = [], text.splitlines()
    for line, nxt in zip(lines, lines[1:]):
        if not line.strip() or not nxt.strip() or nxt[0] == ' ' or line.startswith('Usage:'):
            continue
        if line[0] == ' ':
            # an example or an option's text run on at the left margin
            problems.append(f'{name}: "{line.strip()[:40]}..." wraps to "{nxt[:30]}"')
        elif len(line) + 1 + len(nxt.split()[0]) <= RMARGIN and not line.endswith(':'):
            # a paragraph broken before the margin (a newline in the doc string)
            problems.append(f'{name}: "...{line[-30:]}" is cut before the margin')
    if name != 'specprobe' and not re.search(r'^  -V, --version ', text, re.M):
        problems.append(f'{name}: no -V, --version')
    return problems


def check_wrap(specprobe):
    problems, cmds = wrap_problems('specprobe', run_help(specprobe)), commands(specprobe)
    if not re.search(r'^  -V, --version ', run_help(specprobe), re.M):
        problems.append('specprobe --help: no -V, --version')
    for cmd in cmds:
        problems += wrap_problems(cmd, run_help(specprobe, cmd))
    if problems:
        print('; '.join(problems))
        return 1
    print(f'the help of specprobe and its {len(cmds)} commands filled to the margin, '
          'no example wrapped, -V listed')
    return 0


def main():
    if len(sys.argv) == 4 and sys.argv[1] == 'reference':
        return check_reference(sys.argv[2], sys.argv[3])
    if len(sys.argv) > 4 and sys.argv[1] == 'refusals':
        return check_refusals(sys.argv[2], sys.argv[3], sys.argv[4:])
    if len(sys.argv) == 3 and sys.argv[1] == 'wrap':
        return check_wrap(sys.argv[2])
    if len(sys.argv) == 3 and sys.argv[1] == 'shorts':
        return check_shorts(sys.argv[2])
    if len(sys.argv) == 4 and sys.argv[1] == 'man':
        return check_man(sys.argv[2], sys.argv[3])
    sys.exit(__doc__)


if __name__ == '__main__':
    sys.exit(main())
