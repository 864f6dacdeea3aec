package main

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/joist-dev/joist/catalog/ec2"
)

// docType is one instance type of instance-types.md: its info and the allocatable published for it
// (AL2023, no block device mappings).
type docType struct {
	info        *ec2.Info
	allocatable corev1.ResourceList
}

// parseDocs reads the "### `type`" sections with their Labels and Resources tables.
func parseDocs(md string) ([]docType, error) {
	var out []docType
	var cur *docType
	section := ""
	for _, line := range strings.Split(md, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "### `"):
			name := strings.Trim(strings.TrimPrefix(line, "### "), "`")
			out = append(out, docType{info: &ec2.Info{Name: name, Labels: map[string]string{}}, allocatable: corev1.ResourceList{}})
			cur = &out[len(out)-1]
		case strings.HasPrefix(line, "#### "):
			section = strings.TrimPrefix(line, "#### ")
		case cur != nil && strings.HasPrefix(line, "|") && !strings.HasPrefix(line, "|--") && !strings.HasPrefix(line, "| Label") && !strings.HasPrefix(line, "| Resource"):
			cells := strings.Split(strings.TrimSuffix(strings.TrimPrefix(line, "|"), "|"), "|")
			if len(cells) != 2 {
				return nil, fmt.Errorf("%s: malformed row %q", cur.info.Name, line)
			}
			k, v := strings.TrimSpace(cells[0]), strings.TrimSpace(cells[1])
			if err := cur.add(section, k, v); err != nil {
				return nil, fmt.Errorf("%s: %w", cur.info.Name, err)
			}
		}
	}
	for _, dt := range out {
		if dt.info.VCPU == 0 || dt.info.MemoryMiB == 0 || dt.info.Arch == "" {
			return nil, fmt.Errorf("%s: missing cpu, memory or arch", dt.info.Name)
		}
	}
	return out, nil
}

func (dt *docType) add(section, k, v string) error {
	switch section {
	case "Labels":
		switch k {
		case "node.kubernetes.io/instance-type":
			return nil // implied by the name
		case "kubernetes.io/arch":
			dt.info.Arch = v
		case "karpenter.k8s.aws/instance-cpu", "karpenter.k8s.aws/instance-memory":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return fmt.Errorf("label %s=%q: %w", k, v, err)
			}
			if k == "karpenter.k8s.aws/instance-cpu" {
				dt.info.VCPU = n
			} else {
				dt.info.MemoryMiB = n
			}
		}
		if k != "kubernetes.io/arch" {
			dt.info.Labels[k] = v
		}
	case "Resources":
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return fmt.Errorf("resource %s=%q: %w", k, v, err)
		}
		dt.allocatable[corev1.ResourceName(k)] = q
		switch corev1.ResourceName(k) {
		case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods, corev1.ResourceEphemeralStorage:
		default:
			if dt.info.Extended == nil {
				dt.info.Extended = map[string]int64{}
			}
			dt.info.Extended[k] = q.Value()
		}
	}
	return nil
}

// verify recomputes the allocatable and names any resource that differs from the published one.
func verify(dt docType) string {
	it, err := ec2.Build(dt.info, ec2.DefaultSettings())
	if err != nil {
		return fmt.Sprintf("%s: %v", dt.info.Name, err)
	}
	got := it.Allocatable()
	var diffs []string
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods, corev1.ResourceEphemeralStorage} {
		want, ok := dt.allocatable[name]
		g := got[name]
		if ok && g.Cmp(want) != 0 {
			diffs = append(diffs, fmt.Sprintf("%s %s≠%s", name, g.String(), want.String()))
		}
	}
	if len(diffs) == 0 {
		return ""
	}
	return dt.info.Name + ": " + strings.Join(diffs, ", ")
}
