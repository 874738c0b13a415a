#!/usr/bin/env bash
# Build the odelint benchmark corpus: real JAX-ecosystem Python source from PyPI
# source distributions (sdists), pinned by version and sha256: 2,252 files,
# 811,214 lines. bench/run.py measures odelint and its peers on it.
#
#   usage: bash bench/make_corpus.sh TARGET_DIR     (e.g. /tmp/corpus; keep it out of the repo)
#
# TARGET_DIR/<pkg>/...   the .py files of each sdist (top-level "<pkg>-<ver>/"
#                        directory stripped; nothing but *.py is unpacked)
# TARGET_DIR/MANIFEST.tsv  pkg, version, sha256, .py files, lines, files mentioning "jax"
#
# Needs: python3 (with venv), tar, sha256sum, network access to PyPI.
# `pip download --no-binary :all:` builds each sdist's metadata, so pip fetches
# the build backends (setuptools, hatchling, flit, ...) into isolated build
# environments; expect ~1-2 minutes. Nothing is installed outside a mktemp dir.
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 TARGET_DIR" >&2
  exit 2
fi
target=$1
if [ -e "$target" ] && [ -n "$(ls -A "$target" 2>/dev/null)" ]; then
  echo "error: $target exists and is not empty" >&2
  exit 2
fi
mkdir -p "$target"
target=$(cd "$target" && pwd)

# name==version  sdist-sha256
PINS='
jax==0.10.2               bf77428a8c2e6904c4f46d5ab12aa5cfc6cad2179f07f7e4c0fc75ac86ef0639
flax==0.12.8              1bb438775b967a3f1f42b9c3d4ddf1d2883cd6406589f9cecdc244634036bdc4
equinox==0.13.8           dd075050018e2dd02e252e9d29d3060f7e67f085622d8d27a8e89e24bb8523db
diffrax==0.7.2            9adc70fe90dba83f7dd839845839b2531a3dd736a3944fe1aa26598507cfb48e
optax==0.2.8              5b225b35066fc3eebaa4d798f1b4173b4d57d1a480610908981f8343b50af0b0
lineax==0.1.1             187b8ea93b8e1099fb792e81c6e71a9c269f4fcadbb5313fe312d5847f581f9d
optimistix==0.1.0         f05c9104748e87e1dc10a0b4a2be94e427f98c3eab0b1d41ea24a593d76be03d
numpyro==0.22.0           d428b688f7c6d1f9089b730c242a3817452609e3672bd62bbc1b02ce17f069bb
chex==0.1.92              fa8beff1124204ae466a6eb13cb91ae3c24322a1c7216946aee93d031e2f1996
jaxtyping==0.3.11         b09c14acf6686feb9e0df5b0d8c6e7c5b6f8d36bf059ee54cd522a186c2ef050
dm-haiku==0.0.17          6daa56f3b54f43675713ef7525d1dec7327f2512b57cc2b12104f76f6d7cf581
distrax==0.1.9            5661acacc81c7499aec64bbf7746f2a820677405b3787c780a48c6c0ea9eb065
blackjax==1.7.1           5e15e5d574afc40d59cfcf2b7fb4561f24bfa7169d846209ecf2a3b3725cc519
orbax-checkpoint==0.12.8  fd9594cfc6dbd7881a8ce37ee9379b2a14c0e11ed49c774df1578c5ef4c6259a
'

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

python3 -m venv "$work/venv"
pip=("$work/venv/bin/python" -m pip)
mkdir -p "$work/dl"

specs=$(printf '%s\n' "$PINS" | awk 'NF==2 {print $1}')
# shellcheck disable=SC2086
"${pip[@]}" download --quiet --no-deps --no-binary :all: -d "$work/dl" $specs

printf 'pkg\tversion\tsdist_sha256\tpy_files\tlines\tfiles_mentioning_jax\n' > "$target/MANIFEST.tsv"

printf '%s\n' "$PINS" | awk 'NF==2' | while read -r spec sha; do
  name=${spec%%==*}
  ver=${spec##*==}
  norm=$(printf '%s' "$name" | tr '-' '_')
  sdist=""
  for cand in "$work/dl/$name-$ver.tar.gz" "$work/dl/$norm-$ver.tar.gz" \
              "$work/dl/$name-$ver.zip" "$work/dl/$norm-$ver.zip"; do
    if [ -f "$cand" ]; then sdist=$cand; break; fi
  done
  if [ -z "$sdist" ]; then
    echo "error: sdist for $spec not found in download dir" >&2
    exit 1
  fi
  got=$(sha256sum "$sdist" | awk '{print $1}')
  if [ "$got" != "$sha" ]; then
    echo "error: sha256 mismatch for $spec: got $got, want $sha" >&2
    exit 1
  fi
  dest="$target/$name"
  mkdir -p "$dest"
  case "$sdist" in
    *.tar.gz)
      tar -xzf "$sdist" -C "$dest" --strip-components=1 --wildcards '*.py'
      ;;
    *.zip)
      "$work/venv/bin/python" - "$sdist" "$dest" <<'EOF'
import sys, zipfile, pathlib
src, dest = sys.argv[1], pathlib.Path(sys.argv[2])
with zipfile.ZipFile(src) as z:
    for n in z.namelist():
        if n.endswith(".py") and "/" in n:
            out = dest / n.split("/", 1)[1]
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(z.read(n))
EOF
      ;;
  esac
  nfiles=$(find "$dest" -type f -name '*.py' | wc -l)
  nlines=$(find "$dest" -type f -name '*.py' -print0 | xargs -0 cat | wc -l)
  njax=$(find "$dest" -type f -name '*.py' -print0 | xargs -0 grep -l 'jax' | wc -l || true)
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$ver" "$sha" "$nfiles" "$nlines" "$njax" >> "$target/MANIFEST.tsv"
done

awk -F'\t' 'NR>1 {f+=$4; l+=$5; j+=$6} END {printf "TOTAL\t-\t-\t%d\t%d\t%d\n", f, l, j}' \
  "$target/MANIFEST.tsv" >> "$target/MANIFEST.tsv"
column -t -s "$(printf '\t')" "$target/MANIFEST.tsv" | cut -c1-200 >&2 || cat "$target/MANIFEST.tsv" >&2
echo "corpus ready; measure with: python bench/run.py --corpus $target" >&2
