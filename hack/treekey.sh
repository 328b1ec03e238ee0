#!/usr/bin/env bash
# Prints a key of the working tree: the git tree hash of every tracked and
# untracked (not ignored) file as it is now, staged or not. Two trees with
# the same files have the same key; nothing of the repository's index or
# objects changes but for the blobs written (as git add writes them).
set -euo pipefail
cd "$(dirname "$0")/.."
index=$(mktemp)
trap 'rm -f "$index"' EXIT
cp "$(git rev-parse --git-dir)/index" "$index" 2>/dev/null || rm -f "$index"
GIT_INDEX_FILE=$index git add -A
GIT_INDEX_FILE=$index git write-tree
