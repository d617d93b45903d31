// Package atomicfile writes files whole or not at all: the data goes to a temporary file in the
// destination's folder, which is synced and then renamed over the destination. A crash, a full
// disk, a failing writer or Ctrl-C in the middle leaves the destination as it was (the previous
// file, or no file); it never holds half of the new one. Every file mhalab writes goes through
// Write or WriteFile.
//
// The destination is resolved first: when it is a symbolic link, the file it points at is
// replaced and the link stays. An existing destination keeps its permission bits; a new one gets
// 0644. A destination with other hard links is replaced by a new file (the other names keep the
// old contents), as with every write-and-rename. A process killed between the creation and the
// rename can leave its temporary file, ".NAME.tmp-*", next to the destination.
package atomicfile
