package admission

import (
	"context"
	"fmt"

	"sudoku-fcgi/nginx"
)

// Extension runs l as a part of the edge (nginx.Extension): it writes the
// two includes before nginx starts, then runs the loop, whose renders go
// through the supervisor's check-and-reload path. A nil l (the controller
// off) writes includes with comments only, which nginx.conf still needs.
func Extension(l *Loop) nginx.Extension { return extension{l} }

type extension struct{ l *Loop }

var _ nginx.Extension = extension{}

func (x extension) Start(ctx context.Context, e *nginx.Edge) error {
	files, err := render(queue{}, "")
	if l := x.l; l != nil {
		l.apply = applierFunc(func(ctx context.Context, f includeFiles) error {
			_, err := e.Apply(ctx, includes(f)...)
			return err
		})
		files, err = l.start()
		if err == nil && l.Counter != nil {
			err = l.Counter.listen()
		}
	}
	if err != nil {
		return fmt.Errorf("admission: %w", err)
	}
	_, err = e.Apply(ctx, includes(files)...)
	return err
}

// Run reads nginx's log lines and runs the loop until ctx ends.
func (x extension) Run(ctx context.Context, _ *nginx.Edge) {
	l := x.l
	if l == nil {
		return
	}
	if c := l.Counter; c != nil {
		go func() {
			if err := c.serve(); err != nil && ctx.Err() == nil {
				l.Log.Error().Err(err).Msg("reading nginx's access log socket")
			}
		}()
		defer c.close()
	}
	l.run(ctx)
	<-ctx.Done()
}

// includes names the rendered files as nginx.conf includes them.
func includes(f includeFiles) []nginx.Include {
	return []nginx.Include{{Name: "admission-http.conf", Data: f.HTTP}, {Name: "admission-queue.conf", Data: f.Location}}
}
