package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Checkpoint is the model after Step steps, with the loss it had.
type Checkpoint struct {
	Step  int     `json:"step"`
	Loss  float64 `json:"loss"`
	Model Model   `json:"model"`
}

// sealed is a checkpoint as written: its bytes and their digest, so that a
// torn or partly written file is never loaded.
type sealed struct {
	Checkpoint json.RawMessage `json:"checkpoint"`
	SHA256     string          `json:"sha256"`
}

// Save writes c to dir atomically: a temporary file, fsync, rename, fsync
// of the directory. A crash leaves either the old set or the new file.
func Save(dir string, c Checkpoint) error {
	body, err := json.Marshal(c)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(body)
	data, err := json.Marshal(sealed{Checkpoint: body, SHA256: hex.EncodeToString(sum[:])})
	if err != nil {
		return err
	}
	final := filepath.Join(dir, fmt.Sprintf("ckpt-%09d.json", c.Step))
	tmp, err := os.CreateTemp(dir, ".ckpt-*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a successful rename, nothing to remove
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), final); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// LoadNewest returns the newest complete checkpoint in dir, and false
// when there is none. Files that do not verify (torn, truncated, edited)
// are skipped, and named in skipped.
func LoadNewest(dir string) (c Checkpoint, ok bool, skipped []string, err error) {
	names, err := filepath.Glob(filepath.Join(dir, "ckpt-*.json"))
	if err != nil {
		return c, false, nil, err
	}
	sort.Sort(sort.Reverse(sort.StringSlice(names)))
	for _, name := range names {
		c, err := load(name)
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("%s (%v)", filepath.Base(name), err))
			continue
		}
		return c, true, skipped, nil
	}
	return c, false, skipped, nil
}

func load(name string) (Checkpoint, error) {
	var c Checkpoint
	data, err := os.ReadFile(name)
	if err != nil {
		return c, err
	}
	var s sealed
	if err := json.Unmarshal(data, &s); err != nil {
		return c, errors.New("not a whole checkpoint")
	}
	sum := sha256.Sum256(s.Checkpoint)
	if hex.EncodeToString(sum[:]) != s.SHA256 {
		return c, errors.New("digest mismatch")
	}
	if err := json.Unmarshal(s.Checkpoint, &c); err != nil {
		return c, err
	}
	want := fmt.Sprintf("ckpt-%09d.json", c.Step)
	if !strings.HasSuffix(name, want) {
		return c, fmt.Errorf("holds step %d", c.Step)
	}
	return c, nil
}
