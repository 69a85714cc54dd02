#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Reads every command's --help and the man page, and checks one against the other.

  check_cli.py shorts SPECPROBE        a short option means one long option in every
      command, and a long option has the same short one (or none) everywhere
  check_cli.py man SPECPROBE MANPAGE   the commands, each command's options and top's
      keys are the same in --help and in the man page
"""
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


def main():
    if len(sys.argv) == 3 and sys.argv[1] == 'shorts':
        return check_shorts(sys.argv[2])
    if len(sys.argv) == 4 and sys.argv[1] == 'man':
        return check_man(sys.argv[2], sys.argv[3])
    sys.exit(__doc__)


if __name__ == '__main__':
    sys.exit(main())
