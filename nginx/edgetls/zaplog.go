package edgetls

import (
	"github.com/rs/zerolog"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// zapToZerolog is a zapcore.Core that writes certmagic's zap records
// through a zerolog logger, so that the edge logs one JSON format.
type zapToZerolog struct {
	log    zerolog.Logger
	fields []zapcore.Field
}

var _ zapcore.Core = zapToZerolog{}

// newZapLogger returns a *zap.Logger (what certmagic takes) that logs to l.
func newZapLogger(l zerolog.Logger) *zap.Logger {
	return zap.New(zapToZerolog{log: l})
}

func zerologLevel(l zapcore.Level) zerolog.Level {
	switch {
	case l <= zapcore.DebugLevel:
		return zerolog.DebugLevel
	case l == zapcore.InfoLevel:
		return zerolog.InfoLevel
	case l == zapcore.WarnLevel:
		return zerolog.WarnLevel
	default:
		return zerolog.ErrorLevel
	}
}

func (c zapToZerolog) Enabled(l zapcore.Level) bool {
	return zerologLevel(l) >= c.log.GetLevel()
}

func (c zapToZerolog) With(fields []zapcore.Field) zapcore.Core {
	return zapToZerolog{log: c.log, fields: append(c.fields[:len(c.fields):len(c.fields)], fields...)}
}

func (c zapToZerolog) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c zapToZerolog) Write(e zapcore.Entry, fields []zapcore.Field) error {
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range c.fields {
		f.AddTo(enc)
	}
	for _, f := range fields {
		f.AddTo(enc)
	}
	ev := c.log.WithLevel(zerologLevel(e.Level))
	if e.LoggerName != "" {
		ev = ev.Str("logger", e.LoggerName)
	}
	ev.Fields(enc.Fields).Msg(e.Message)
	return nil
}

func (c zapToZerolog) Sync() error { return nil }
