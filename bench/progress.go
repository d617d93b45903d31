package bench

import (
	"fmt"
	"io"
	"strings"
)

// progressBar draws "[#####.....] 3/20 label" on one terminal line.
type progressBar struct {
	w       io.Writer
	enabled bool
	total   int
	done    int
	started bool
}

func (p *progressBar) start(label string) {
	if p.started {
		p.done++
	}
	p.started = true
	if !p.enabled || p.total == 0 {
		return
	}
	const width = 30
	filled := width * p.done / p.total
	fmt.Fprintf(p.w, "\r\033[K[%s%s] %d/%d %s", strings.Repeat("#", filled), strings.Repeat(".", width-filled), p.done, p.total, label)
}

func (p *progressBar) finish() {
	if p.enabled && p.started {
		fmt.Fprint(p.w, "\r\033[K")
	}
}
