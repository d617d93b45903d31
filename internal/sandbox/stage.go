package sandbox

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Permission bits asked of a path by canReach.
const (
	permR = 4
	permW = 2
	permX = 1
)

// canReach reports whether uid (with gid as its only group) can search every folder above
// path and has the want bits (permR|permX…) on path itself, by the mode bits (no ACLs). When
// not, it names the first path that stops it. path must be absolute and free of symlinks.
func canReach(path string, uid, gid int, want uint32) (bool, string) {
	parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
	cur := "/"
	for i := 0; i <= len(parts); i++ {
		var st syscall.Stat_t
		if err := syscall.Stat(cur, &st); err != nil {
			return false, cur
		}
		need := uint32(permX)
		if i == len(parts) {
			need = want
		}
		var bits uint32
		switch {
		case int(st.Uid) == uid:
			bits = st.Mode >> 6
		case int(st.Gid) == gid:
			bits = st.Mode >> 3
		default:
			bits = st.Mode
		}
		if bits&need != need {
			return false, cur
		}
		if i == len(parts) || parts[i] == "" {
			break
		}
		cur = filepath.Join(cur, parts[i])
	}
	return true, ""
}

// stager puts read-only paths the child's uid cannot reach into one folder it can.
type stager struct {
	uid, gid int
	dir      string            // mode 0750, root:gid; "" until needed
	mapped   map[string]string // caller's path (as given and resolved) → the child's path
}

// add makes path (absolute) readable for the child and returns where the child sees it.
func (s *stager) add(path string) (string, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", fmt.Errorf("sandbox: %w", err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", fmt.Errorf("sandbox: %w", err)
	}
	want := uint32(permR)
	if fi.IsDir() || fi.Mode()&0o111 != 0 {
		want |= permX
	}
	if ok, _ := canReach(real, s.uid, s.gid, want); ok && (!fi.IsDir() || treeReadable(real)) {
		return path, nil
	}
	if p, ok := s.mapped[real]; ok {
		s.mapped[path] = p
		return p, nil
	}
	if s.dir == "" {
		d, err := os.MkdirTemp("", "mhalab-sandbox-ro-")
		if err != nil {
			return "", fmt.Errorf("sandbox: staging folder: %w", err)
		}
		if err := os.Chown(d, 0, s.gid); err != nil {
			os.RemoveAll(d)
			return "", fmt.Errorf("sandbox: staging folder: %w", err)
		}
		if err := os.Chmod(d, 0o750); err != nil {
			os.RemoveAll(d)
			return "", fmt.Errorf("sandbox: staging folder: %w", err)
		}
		s.dir = d
		s.mapped = map[string]string{}
	}
	// One subfolder per staged path keeps equal base names apart.
	sub := filepath.Join(s.dir, strconv.Itoa(len(s.mapped)))
	if err := os.Mkdir(sub, 0o755); err != nil {
		return "", fmt.Errorf("sandbox: staging: %w", err)
	}
	dst := filepath.Join(sub, filepath.Base(real))
	if fi.IsDir() {
		err = copyTree(real, dst)
	} else {
		err = linkOrCopy(real, dst, fi)
	}
	if err != nil {
		return "", fmt.Errorf("sandbox: staging %s: %w", path, err)
	}
	s.mapped[real] = dst
	s.mapped[path] = dst
	return dst, nil
}

// treeReadable reports whether every entry beneath dir is readable by others (folders also
// searchable), so that a reachable folder needs no staging.
func treeReadable(dir string) bool {
	ok := true
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			ok = false
			return fs.SkipAll
		}
		fi, err := d.Info()
		if err != nil {
			ok = false
			return fs.SkipAll
		}
		m := fi.Mode()
		if (m.IsDir() && m.Perm()&0o005 != 0o005) || (m.IsRegular() && m.Perm()&0o004 == 0) {
			ok = false
			return fs.SkipAll
		}
		return nil
	})
	return ok
}

// linkOrCopy puts src at dst: a hard link when src is readable by others (same inode, no
// copy: the 250 MB PJRT plugin costs nothing), else — or across file systems — a copy
// readable by others, keeping the execute bits.
func linkOrCopy(src, dst string, fi fs.FileInfo) error {
	if fi.Mode().Perm()&0o004 != 0 {
		if err := os.Link(src, dst); err == nil {
			return nil
		}
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	perm := fi.Mode().Perm()&0o755 | 0o444
	if perm&0o100 != 0 {
		perm |= 0o111
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Chmod(dst, perm) // past the umask
}

// copyTree mirrors the folder src at dst: folders 0755, files linked or copied, symlinks
// recreated as they are; other kinds (devices, sockets, fifos) are skipped.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch m := fi.Mode(); {
		case m.IsDir():
			if err := os.Mkdir(to, 0o755); err != nil {
				return err
			}
			return os.Chmod(to, 0o755)
		case m&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, to)
		case m.IsRegular():
			return linkOrCopy(p, to, fi)
		}
		return nil
	})
}

// childPath is where the child sees path: its staged copy, or path itself.
func (s *stager) childPath(path string) string {
	for from, to := range s.mapped {
		if path == from {
			return to
		}
		if strings.HasPrefix(path, strings.TrimSuffix(from, "/")+"/") {
			return to + path[len(strings.TrimSuffix(from, "/")):]
		}
	}
	return path
}

// chownTree gives dir and everything beneath it to uid:gid, without following symlinks.
func chownTree(dir string, uid, gid int) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
}
