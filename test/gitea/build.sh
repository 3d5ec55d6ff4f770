#!/usr/bin/env bash
# Build a Gitea binary for the end-to-end tests, once, into a cache folder
# outside the repository. A second run finds the binary and does nothing.
#
#   test/gitea/build.sh [version]      prints the path of the binary
#
# GITEA_CACHE overrides the cache folder ($HOME/.cache/cup-gitea). The build
# uses the module zip from the Go module proxy: `go install` refuses Gitea's
# module (it has replace directives), so the module is copied to a writable
# place and built there. The module zip lacks the generated bindata.dat,
# so the binary is built without the bindata tag and reads its templates
# and options from the module copy: run it with STATIC_ROOT_PATH=<cache>/src.
set -euo pipefail

version=${1:-1.26.0}
cache=${GITEA_CACHE:-$HOME/.cache/cup-gitea}/$version
bin=$cache/gitea
if [[ -x $bin ]]; then
	echo "$bin"
	exit 0
fi

mkdir -p "$cache"
echo "building Gitea $version into $cache (about 11 minutes on 2 cores)" >&2
dir=$(cd /tmp && go mod download -json "code.gitea.io/gitea@v$version" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
if [[ -z $dir ]]; then
	echo "error: go mod download code.gitea.io/gitea@v$version found no module" >&2
	exit 1
fi
src=$cache/src
rm -rf "$src"
cp -R "$dir" "$src"
chmod -R u+w "$src"
(
	cd "$src"
	CGO_ENABLED=1 GOFLAGS=-buildvcs=false go build -trimpath \
		-tags 'sqlite sqlite_unlock_notify' \
		-ldflags "-s -w -X main.Version=$version" \
		-o "$bin.tmp" .
)
mv "$bin.tmp" "$bin"
echo "$bin"
