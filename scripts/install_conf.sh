#!/bin/sh
# meson install script: puts dist/mmlockd.conf in <sysconfdir>/mmlockd.conf only when there is none
# yet, so `make install` over an installation keeps the operator's edits (the pristine copy is
# always installed as <datadir>/mmlockd/mmlockd.conf). Honours DESTDIR as meson sets it.
# usage: install_conf.sh SYSCONFDIR SOURCE_CONF
set -eu
dir=${DESTDIR:-}$1
dst=$dir/mmlockd.conf
if [ -e "$dst" ]; then
	echo "Keeping $dst (the default is in the datadir's mmlockd/mmlockd.conf)"
	exit 0
fi
mkdir -p "$dir"
cp "$2" "$dst"
chmod 0644 "$dst"
echo "Installing $2 to $dst"
