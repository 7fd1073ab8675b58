#!/usr/bin/env bash
# build-h2load-h3.sh [DIR] — build h2load with HTTP/3 (nghttp2's load
# generator over ngtcp2 and nghttp3) from the projects' public sources, in
# DIR (default ${XDG_CACHE_HOME:-~/.cache}/benchflow/h2load-h3), never in
# this tree, and print the H2LOAD_H3=… line for compare-h3.sh. Debian's
# nghttp2-client is built without QUIC.
#
# The TLS library: nghttp2's programs speak TLS through OpenSSL's API, and
# h2load's HTTP/3 needs an ngtcp2 crypto backend for the same library:
# quictls, BoringSSL/aws-lc, LibreSSL, OpenSSL >= 3.5 or wolfSSL >= 5.7
# (nghttp2's configure.ac). ngtcp2's GnuTLS backend builds against Debian
# 12's libgnutls28-dev 3.7.9, but no nghttp2 program can use it, and
# Debian 12's own OpenSSL (3.0) and wolfSSL (5.5.4) are too old. So the
# recipe builds the TLS library too, with the set nghttp2 v1.69.0's own CI
# builds together (v1.70.0 wants C++23's <print>, which Debian 12's g++ 12
# lacks):
#
#   TLS=boringssl (the default): BoringSSL at the commit that CI pins
#     (664a985707470a62f436cca862ccec9524c561ca; BoringSSL has no tags),
#     built by cmake, libssl.a and libcrypto.a alone
#   TLS=wolfssl: wolfSSL v5.9.0-stable
#   and with either: nghttp3 v1.15.0, ngtcp2 v1.22.1, nghttp2 v1.69.0
#
# All are static libraries (--disable-shared), so DIR/bin/h2load needs only
# the system's libev, c-ares, zlib and C++ runtime. Each stage is skipped
# when its result exists: rerunning after a failure resumes (a DIR holds
# one TLS library's build; use another DIR for the other).
#
# Needs: git, a C and C++ compiler, make, autoconf, automake, libtool,
# pkg-config, the headers of libev, c-ares and zlib, and for BoringSSL
# cmake (ninja is used when present):
#   apt-get install git g++ make autoconf automake libtool pkg-config libev-dev libc-ares-dev zlib1g-dev cmake ninja-build
#
# Environment: TLS (boringssl or wolfssl), BORINGSSL_COMMIT, WOLFSSL_TAG,
#   NGHTTP3_TAG, NGTCP2_TAG, NGHTTP2_TAG (the versions above), GITHUB
#   (default https://github.com: where the repositories and their
#   submodules are cloned from, as GITHUB/OWNER/NAME — google/boringssl,
#   wolfSSL/wolfssl, ngtcp2/nghttp3, ngtcp2/ngtcp2, nghttp2/nghttp2,
#   ngtcp2/sfparse, ngtcp2/munit, ngtcp2/urlparse —, a local folder of
#   clones too; git's url.<base>.insteadOf settings apply), JOBS (default
#   nproc), BORINGSSL_SRC (a BoringSSL source tree to build instead of
#   fetching one, e.g. a checkout of a local copy without network; it is
#   built in BORINGSSL_SRC/build, and a checkout at another commit than
#   BORINGSSL_COMMIT is built with a warning).
set -euo pipefail

DIR=${1:-${XDG_CACHE_HOME:-$HOME/.cache}/benchflow/h2load-h3}
TLS=${TLS:-boringssl}
BORINGSSL_COMMIT=${BORINGSSL_COMMIT:-664a985707470a62f436cca862ccec9524c561ca}
WOLFSSL_TAG=${WOLFSSL_TAG:-v5.9.0-stable}
NGHTTP3_TAG=${NGHTTP3_TAG:-v1.15.0}
NGTCP2_TAG=${NGTCP2_TAG:-v1.22.1}
NGHTTP2_TAG=${NGHTTP2_TAG:-v1.69.0}
GITHUB=${GITHUB:-https://github.com}
JOBS=${JOBS:-$(nproc)}
NAME=build-h2load-h3

DIR=$(realpath -m "$DIR")
top=$(cd "$(dirname "$0")" && git rev-parse --show-toplevel 2>/dev/null || true)
case $DIR/ in
"$top"/*) [ -z "$top" ] || { echo "$NAME: $DIR is inside benchflow's tree ($top): build outside it (sources and binaries are never committed)" >&2; exit 1; } ;;
esac
mkdir -p "$DIR"

case $TLS in boringssl | wolfssl) ;; *) echo "$NAME: TLS=$TLS: want boringssl or wolfssl" >&2; exit 1 ;; esac
tools=(git cc c++ make autoreconf automake libtoolize pkg-config)
[ "$TLS" = boringssl ] && tools+=(cmake)
missing=()
for t in "${tools[@]}"; do
	command -v "$t" >/dev/null || missing+=("$t")
done
for h in ev.h ares.h zlib.h; do
	echo "#include <$h>" | cc -E -x c - >/dev/null 2>&1 || missing+=("$h")
done
if [ ${#missing[@]} -gt 0 ]; then
	pkgs="git g++ make autoconf automake libtool pkg-config libev-dev libc-ares-dev zlib1g-dev"
	[ "$TLS" = boringssl ] && pkgs="$pkgs cmake ninja-build"
	echo "$NAME: missing ${missing[*]}: apt-get install $pkgs" >&2
	exit 1
fi

# fetch NAME OWNER/REPO TAG SUBMODULE…: a shallow clone of TAG with the
# submodules the build needs (not nghttp2's mruby and neverbleed), from
# GITHUB too (their .gitmodules name github.com).
fetch() {
	local name=$1 repo=$2 tag=$3
	shift 3
	[ -d "$DIR/src/$name/.git" ] && return
	echo "== fetching $repo $tag" >&2
	rm -rf "$DIR/src/$name"
	git -c advice.detachedHead=false clone -q --depth 1 -b "$tag" "$GITHUB/$repo" "$DIR/src/$name" ||
		{ echo "$NAME: could not clone $tag of $GITHUB/$repo" >&2; exit 1; }
	local d=$DIR/src/$name key url
	git -C "$d" config -f .gitmodules --get-regexp '\.url$' | while read -r key url; do
		git -C "$d" config "$key" "$GITHUB/${url#https://github.com/}"
	done
	# git refuses submodules from local folders unless told (protocol.file.allow).
	local local_ok=()
	case $GITHUB in /* | file://*) local_ok=(-c protocol.file.allow=always) ;; esac
	git -C "$d" "${local_ok[@]}" -c advice.detachedHead=false submodule -q update --init -- "$@" ||
		{ echo "$NAME: could not fetch the submodules $* of $repo" >&2; exit 1; }
}

# fetch_commit NAME OWNER/REPO COMMIT: COMMIT alone (for a repository
# without tags), from GITHUB.
fetch_commit() {
	local name=$1 repo=$2 commit=$3 d=$DIR/src/$1
	[ -d "$d/.git" ] && return
	echo "== fetching $repo $commit" >&2
	rm -rf "$d"
	{ git init -q "$d" && git -C "$d" fetch -q --depth 1 "$GITHUB/$repo" "$commit" &&
		git -C "$d" -c advice.detachedHead=false checkout -q FETCH_HEAD; } ||
		{ rm -rf "$d"; echo "$NAME: could not fetch $commit of $GITHUB/$repo" >&2; exit 1; }
}

# build NAME RESULT CONFIGURE_ARGS…: autoreconf, configure with
# --prefix=DIR/NAME, make and make install, unless RESULT exists.
build() {
	local name=$1 result=$2
	shift 2
	[ -e "$result" ] && { echo "== $name: $result exists" >&2; return; }
	echo "== building $name" >&2
	(
		cd "$DIR/src/$name"
		autoreconf -i >"$DIR/$name.log" 2>&1
		./configure --disable-dependency-tracking --prefix="$DIR/$name" --disable-shared --enable-static "$@" >>"$DIR/$name.log" 2>&1
		make -j"$JOBS" >>"$DIR/$name.log" 2>&1
		make install >>"$DIR/$name.log" 2>&1
	) || { echo "$NAME: building $name failed; the end of $DIR/$name.log:" >&2; tail -n 30 "$DIR/$name.log" >&2; exit 1; }
}

pc() { printf '%s/lib/pkgconfig:' "$@"; }
fetch nghttp3 ngtcp2/nghttp3 "$NGHTTP3_TAG" lib/sfparse tests/munit
build nghttp3 "$DIR/nghttp3/lib/libnghttp3.a" --enable-lib-only
fetch ngtcp2 ngtcp2/ngtcp2 "$NGTCP2_TAG" tests/munit third-party/urlparse
if [ "$TLS" = boringssl ]; then
	# As nghttp2's CI: cmake with position-independent code; only the two
	# libraries (not BoringSSL's tests and tools).
	if [ -n "${BORINGSSL_SRC:-}" ]; then
		B=$(realpath "$BORINGSSL_SRC")
		[ -f "$B/CMakeLists.txt" ] || { echo "$NAME: BORINGSSL_SRC=$BORINGSSL_SRC holds no BoringSSL source (no CMakeLists.txt)" >&2; exit 1; }
		head=$(git -C "$B" rev-parse HEAD 2>/dev/null || echo "not a git checkout")
		[ "$head" = "$BORINGSSL_COMMIT" ] || echo "$NAME: warning: BORINGSSL_SRC is at $head, not $BORINGSSL_COMMIT" >&2
	else
		fetch_commit boringssl google/boringssl "$BORINGSSL_COMMIT"
		B=$DIR/src/boringssl
	fi
	if [ ! -e "$B/build/libcrypto.a" ] || [ ! -e "$B/build/libssl.a" ]; then
		echo "== building boringssl" >&2
		gen=()
		command -v ninja >/dev/null && gen=(-G Ninja)
		{ cmake -S "$B" -B "$B/build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DCMAKE_POSITION_INDEPENDENT_CODE=ON &&
			cmake --build "$B/build" --target ssl crypto -j "$JOBS"; } >"$DIR/boringssl.log" 2>&1 ||
			{ echo "$NAME: building boringssl failed; the end of $DIR/boringssl.log:" >&2; tail -n 30 "$DIR/boringssl.log" >&2; exit 1; }
	fi
	SSL_FLAGS=(OPENSSL_CFLAGS="-I$B/include" OPENSSL_LIBS="-L$B/build -lssl -lcrypto -pthread")
	build ngtcp2 "$DIR/ngtcp2/lib/libngtcp2_crypto_boringssl.a" --enable-lib-only --with-boringssl --without-openssl \
		BORINGSSL_CFLAGS="-I$B/include" BORINGSSL_LIBS="-L$B/build -lssl -lcrypto" \
		PKG_CONFIG_PATH="$(pc "$DIR/nghttp3")"
	NGHTTP2_TLS=(--with-openssl "${SSL_FLAGS[@]}")
	PCPATH=$(pc "$DIR/nghttp3" "$DIR/ngtcp2")
else
	fetch wolfssl wolfSSL/wolfssl "$WOLFSSL_TAG"
	build wolfssl "$DIR/wolfssl/lib/libwolfssl.a" --enable-all --enable-harden --disable-ech
	build ngtcp2 "$DIR/ngtcp2/lib/libngtcp2_crypto_wolfssl.a" --enable-lib-only --with-wolfssl \
		PKG_CONFIG_PATH="$(pc "$DIR/wolfssl" "$DIR/nghttp3")"
	NGHTTP2_TLS=(--with-wolfssl)
	PCPATH=$(pc "$DIR/wolfssl" "$DIR/nghttp3" "$DIR/ngtcp2")
fi

# nghttp2: the library, its third-party helpers and h2load alone (not
# nghttpx, nghttp and nghttpd), with HTTP/3 required.
fetch nghttp2 nghttp2/nghttp2 "$NGHTTP2_TAG" tests/munit third-party/urlparse
if [ ! -x "$DIR/bin/h2load" ]; then
	echo "== building nghttp2's h2load" >&2
	(
		cd "$DIR/src/nghttp2"
		autoreconf -i >"$DIR/nghttp2.log" 2>&1
		./configure --disable-dependency-tracking --prefix="$DIR/nghttp2" --disable-shared --enable-static \
			--enable-app --enable-http3 "${NGHTTP2_TLS[@]}" --with-libngtcp2 --with-libnghttp3 \
			--without-jemalloc --without-systemd --without-mruby --without-neverbleed \
			PKG_CONFIG_PATH="$PCPATH" >>"$DIR/nghttp2.log" 2>&1
		grep -q 'HTTP/3 (EXPERIMENTAL): *yes' "$DIR/nghttp2.log" || { echo "configure did not enable HTTP/3"; exit 1; }
		make -j"$JOBS" -C lib >>"$DIR/nghttp2.log" 2>&1
		make -j"$JOBS" -C third-party >>"$DIR/nghttp2.log" 2>&1
		make -j"$JOBS" -C src h2load >>"$DIR/nghttp2.log" 2>&1
	) || { echo "$NAME: building h2load failed; the end of $DIR/nghttp2.log:" >&2; tail -n 30 "$DIR/nghttp2.log" >&2; exit 1; }
	mkdir -p "$DIR/bin"
	cp "$DIR/src/nghttp2/src/h2load" "$DIR/bin/h2load"
fi
"$DIR/bin/h2load" --version
"$DIR/bin/h2load" --help | grep -q -- '--alpn-list' && "$DIR/bin/h2load" --help | grep -q -- '--h3' ||
	{ echo "$NAME: $DIR/bin/h2load does not offer h3" >&2; exit 1; }
echo "H2LOAD_H3=$DIR/bin/h2load"
