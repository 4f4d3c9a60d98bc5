package cluster

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"

	dc "github.com/ory/dockertest/v3/docker"
)

// WriteFile implements FileServer: the file goes into the container's
// /data, its working directory. The engine replaces the file whole.
func (c *container) WriteFile(ctx context.Context, name string, data []byte) error {
	return c.upload(ctx, name, string(data))
}

// ReadFile implements FileServer.
func (c *container) ReadFile(ctx context.Context, name string) ([]byte, error) {
	c.mu.Lock()
	id := c.id
	c.mu.Unlock()
	var buf bytes.Buffer
	err := c.d.client.DownloadFromContainer(id, dc.DownloadFromContainerOptions{
		Path: path.Join("/data", name), OutputStream: &buf, Context: ctx})
	var nf *dc.NoSuchContainer
	switch {
	case err != nil && (errors.As(err, &nf) || isNotFound(err)):
		return nil, fmt.Errorf("read %s of %s: %w", name, c.name, os.ErrNotExist)
	case err != nil:
		return nil, fmt.Errorf("read %s of %s: %w", name, c.name, err)
	}
	tr := tar.NewReader(&buf)
	if _, err := tr.Next(); err != nil {
		return nil, fmt.Errorf("read %s of %s: %w", name, c.name, err)
	}
	b, err := io.ReadAll(tr)
	if err != nil {
		return nil, fmt.Errorf("read %s of %s: %w", name, c.name, err)
	}
	return b, nil
}

// isNotFound tells the engine's "no such file" answer (HTTP 404).
func isNotFound(err error) bool {
	var e *dc.Error
	return errors.As(err, &e) && e.Status == 404
}
