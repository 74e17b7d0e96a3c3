package admission

import (
	"context"
	"fmt"

	"sudoku-fcgi/nginx"
)

// Extension runs l and c as a part of the edge (nginx.Extension): it
// writes the two includes before nginx starts, then runs the loop, whose
// renders go through the supervisor's check-and-reload path, and c, which
// counts nginx's answers from its access log lines. A nil l (the
// controller off) writes includes without a queue, which nginx.conf still
// needs; a nil c counts nothing. With both, l's law reads c's counts.
func Extension(l *Loop, c *LogCounter) nginx.Extension {
	if l != nil {
		l.counter = c
	}
	return extension{l, c}
}

type extension struct {
	l *Loop
	c *LogCounter
}

var _ nginx.Extension = extension{}

func (x extension) Start(ctx context.Context, e *nginx.Edge) error {
	var lines logLines
	if c := x.c; c != nil {
		lines = c.lines()
	}
	files, err := render(queue{}, lines)
	if l := x.l; l != nil {
		l.apply = applierFunc(func(ctx context.Context, f includeFiles) error {
			_, err := e.Apply(ctx, includes(f)...)
			return err
		})
		files, err = l.start()
	}
	if err == nil && x.c != nil {
		err = x.c.listen()
	}
	if err != nil {
		return fmt.Errorf("admission: %w", err)
	}
	_, err = e.Apply(ctx, includes(files)...)
	return err
}

// Run reads nginx's log lines and runs the loop until ctx ends.
func (x extension) Run(ctx context.Context, _ *nginx.Edge) {
	if c := x.c; c != nil {
		go func() {
			if err := c.serve(); err != nil && ctx.Err() == nil {
				c.Log.Error().Err(err).Msg("reading nginx's access log socket")
			}
		}()
		defer c.close()
	}
	if x.l != nil {
		x.l.run(ctx)
	}
	<-ctx.Done()
}

// includes names the rendered files as nginx.conf includes them.
func includes(f includeFiles) []nginx.Include {
	return []nginx.Include{{Name: "admission-http.conf", Data: f.HTTP}, {Name: "admission-queue.conf", Data: f.Location}}
}
