package aws

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/mail"
	"net/textproto"
	"strings"

	"sigs.k8s.io/yaml"
)

// MIME media types of the parts cloud-init and nodeadm read.
const (
	mediaShellScript = `text/x-shellscript; charset="us-ascii"`
	mediaNodeConfig  = "application/node.eks.aws"
	mimeBoundary     = "//"
)

// mimePart is one part of a multi-part user data archive.
type mimePart struct {
	contentType string
	content     string
}

// isMIME reports whether user data starts with MIME headers (Karpenter's test: a leading
// MIME-Version or Content-Type header).
func isMIME(data string) bool {
	s := strings.TrimSpace(data)
	return strings.HasPrefix(s, "MIME-Version:") || strings.HasPrefix(s, "Content-Type:")
}

// parseMIME reads a multi-part MIME document into its parts.
func parseMIME(data string) ([]mimePart, error) {
	msg, err := mail.ReadMessage(strings.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("userData is not a MIME document: %w", err)
	}
	mediaType, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil {
		return nil, fmt.Errorf("userData's Content-Type header: %w", err)
	}
	if !strings.HasPrefix(mediaType, "multipart/") {
		return nil, fmt.Errorf("userData's Content-Type is %s, not multipart/mixed", mediaType)
	}
	if params["boundary"] == "" {
		return nil, errors.New("userData's multipart Content-Type has no boundary")
	}
	r := multipart.NewReader(msg.Body, params["boundary"])
	var parts []mimePart
	for {
		p, err := r.NextPart()
		if errors.Is(err, io.EOF) {
			return parts, nil
		}
		if err != nil {
			return nil, fmt.Errorf("userData MIME part %d: %w", len(parts)+1, err)
		}
		body, err := io.ReadAll(p)
		if err != nil {
			return nil, fmt.Errorf("userData MIME part %d: %w", len(parts)+1, err)
		}
		ct := p.Header.Get("Content-Type")
		if ct == "" {
			ct = "text/plain"
		}
		parts = append(parts, mimePart{contentType: ct, content: string(body)})
	}
}

// customParts turns the NodeClass's userData into MIME parts: a MIME document's parts as they
// are; a bare YAML document (a NodeConfig) as a NodeConfig part when nodeConfig is true; anything
// else as a shell script part.
func customParts(data string, nodeConfig bool) ([]mimePart, error) {
	if strings.TrimSpace(data) == "" {
		return nil, nil
	}
	if isMIME(data) {
		return parseMIME(data)
	}
	if nodeConfig && isYAMLObject(data) {
		return []mimePart{{contentType: mediaNodeConfig, content: data}}, nil
	}
	return []mimePart{{contentType: mediaShellScript, content: data}}, nil
}

// isYAMLObject: a YAML mapping (a shell script such as `echo hi` parses as a YAML string, and a
// `#!/bin/bash` script as nothing at all).
func isYAMLObject(data string) bool {
	var m map[string]any
	return yaml.Unmarshal([]byte(data), &m) == nil && len(m) > 0
}

// writeMIME serializes parts as a multipart/mixed document with LF line ends (the multipart writer
// writes CRLF; cloud-init and nodeadm read either, and LF keeps the document readable).
func writeMIME(parts []mimePart) (string, error) {
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	if err := w.SetBoundary(mimeBoundary); err != nil {
		return "", err
	}
	buf.WriteString("MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"" + mimeBoundary + "\"\n\n")
	for _, p := range parts {
		pw, err := w.CreatePart(textproto.MIMEHeader{"Content-Type": {p.contentType}})
		if err != nil {
			return "", err
		}
		if _, err := io.WriteString(pw, p.content); err != nil {
			return "", err
		}
	}
	if err := w.Close(); err != nil {
		return "", err
	}
	return strings.ReplaceAll(buf.String(), "\r\n", "\n"), nil
}
