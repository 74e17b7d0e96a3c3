package cli

import (
	"bytes"
	"errors"
	"flag"
	"slices"
	"testing"
)

func TestParseFiles(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		env       map[string]string
		wantFiles []string
		wantC     int
		wantErr   string
	}{
		{"no files", nil, nil, nil, 32, ""},
		{"files after flags", []string{"-c", "8", "a.txt", "b.txt"}, nil, []string{"a.txt", "b.txt"}, 8, ""},
		{"env fills what the flags do not", []string{"a.txt"}, map[string]string{"SUDOKU_LOAD_C": "4"}, []string{"a.txt"}, 4, ""},
		{"flag wins over env", []string{"-c", "8", "a.txt"}, map[string]string{"SUDOKU_LOAD_C": "4"}, []string{"a.txt"}, 8, ""},
		{"bad env value", []string{"a.txt"}, map[string]string{"SUDOKU_LOAD_C": "many"}, nil, 0, `invalid value "many" for $SUDOKU_LOAD_C`},
		{"unknown flag", []string{"-nope", "a.txt"}, nil, nil, 0, "flag provided but not defined: -nope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			fs, _, c, _ := newTestSet(&out)
			files, err := fs.ParseFiles(tt.args, env(tt.env))
			if tt.wantErr != "" {
				var ue *UsageError
				if !errors.As(err, &ue) || ue.Error() == "" || !bytes.Contains([]byte(err.Error()), []byte(tt.wantErr)) {
					t.Fatalf("ParseFiles(%q) = %v, want a *UsageError containing %q", tt.args, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseFiles(%q) = %v", tt.args, err)
			}
			if !slices.Equal(files, tt.wantFiles) || *c != tt.wantC {
				t.Errorf("ParseFiles(%q) = %q with c %d, want %q with c %d", tt.args, files, *c, tt.wantFiles, tt.wantC)
			}
		})
	}
}

func TestParseFilesHelpAndVersion(t *testing.T) {
	for _, arg := range []string{"-h", "-version"} {
		var out bytes.Buffer
		fs, _, _, _ := newTestSet(&out)
		if _, err := fs.ParseFiles([]string{arg, "a.txt"}, env(nil)); !errors.Is(err, flag.ErrHelp) {
			t.Errorf("ParseFiles(%s) = %v, want flag.ErrHelp", arg, err)
		}
		if out.Len() == 0 {
			t.Errorf("ParseFiles(%s) printed nothing", arg)
		}
	}
}
