package nginx

import (
	"context"
	"fmt"

	"sudoku-fcgi/nginx/admission"
)

// The admission queue's seam in the Supervisor (nginx/README.md,
// "Admission"): the includes before nginx starts, then the loop, whose
// renders go through the same Applier as every other change.

// writeAdmissionStart writes admission-http.conf and admission-queue.conf
// (comments only without s.Admission) and opens the log counter's socket.
func (s *Supervisor) writeAdmissionStart() error {
	files, err := admission.Render(admission.Queue{}, "")
	if l := s.Admission; l != nil {
		l.Apply = admission.ApplierFunc(s.applyAdmission)
		files, err = l.Start()
		if err == nil && l.Counter != nil {
			err = l.Counter.Listen()
		}
	}
	if err != nil {
		return fmt.Errorf("admission: %w", err)
	}
	for _, c := range s.admissionChanges(files) {
		if _, _, err := c.Stage(); err != nil {
			return fmt.Errorf("writing %s: %w", c, err)
		}
	}
	return nil
}

// runAdmission runs the log counter and the loop until ctx ends.
func (s *Supervisor) runAdmission(ctx context.Context) {
	l := s.Admission
	if l == nil {
		return
	}
	if c := l.Counter; c != nil {
		go func() {
			if err := c.Serve(); err != nil {
				s.Log.Error().Err(err).Msg("reading nginx's access log socket")
			}
		}()
		defer c.Close()
	}
	l.Run(ctx)
	<-ctx.Done()
}

// applyAdmission is the loop's Applier: both files, one check, one reload.
func (s *Supervisor) applyAdmission(ctx context.Context, f admission.Files) error {
	_, err := s.apply(ctx, s.admissionChanges(f)...)
	return err
}

func (s *Supervisor) admissionChanges(f admission.Files) []Change {
	return []Change{
		FileChange{Path: s.path("admission-http.conf"), Data: f.HTTP},
		FileChange{Path: s.path("admission-queue.conf"), Data: f.Location},
	}
}
