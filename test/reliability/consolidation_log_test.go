package reliability

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joist-dev/joist/api/v1"
)

// disruptionLog is what a manager process's log says its disruption loop did.
type disruptionLog struct {
	// replaces and deletes count the commands started; abandoned, those given up; released, the
	// nodes of a dead process's command a new process released; resumed, the dead process's recorded
	// commands a new process took over.
	replaces, deletes, abandoned, released, resumed int
	// replacements are the NodeClaims replace commands launched.
	replacements []string
	// provisioned counts the NodeClaims the provisioner launched for pending pods: during
	// consolidation, pods a command displaced that found no room.
	provisioned int
}

func (d *disruptionLog) add(o disruptionLog) {
	d.replaces += o.replaces
	d.deletes += o.deletes
	d.abandoned += o.abandoned
	d.released += o.released
	d.resumed += o.resumed
	d.replacements = append(d.replacements, o.replacements...)
	d.provisioned += o.provisioned
}

// readDisruptionLog reads the log of the manager's nth start (1-based) from since on; a line cut by
// SIGKILL is skipped.
func (s *stack) readDisruptionLog(n int, since time.Time) (disruptionLog, error) {
	var d disruptionLog
	f, err := os.Open(filepath.Join(s.env.LogDir, fmt.Sprintf("joist-%d.log", n)))
	if err != nil {
		return d, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if !strings.Contains(string(line), `"logger":"disruption"`) && !strings.Contains(string(line), `"logger":"provisioner"`) {
			continue
		}
		var rec struct {
			TS            time.Time `json:"ts"`
			Msg           string    `json:"msg"`
			Replacements  []string  `json:"replacements"`
			NewNodeClaims int       `json:"newNodeClaims"`
		}
		if json.Unmarshal(line, &rec) != nil || rec.TS.Before(since.Truncate(time.Second)) {
			continue
		}
		switch rec.Msg {
		case "solved batch":
			d.provisioned += rec.NewNodeClaims
		case "disruption command started":
			if len(rec.Replacements) > 0 {
				d.replaces++
				d.replacements = append(d.replacements, rec.Replacements...)
			} else {
				d.deletes++
			}
		case "disruption command abandoned":
			d.abandoned++
		case "releasing node of an unfinished disruption command":
			d.released++
		case "resuming disruption command of a previous leader":
			d.resumed++
		}
	}
	return d, sc.Err()
}

// idleReplacements are the named NodeClaims that still exist and host no pod: replacements whose
// command died with its process, left to cost money.
func (s *stack) idleReplacements(ctx context.Context, names []string) ([]string, error) {
	var idle []string
	for _, name := range names {
		nc := &v1.NodeClaim{}
		if err := s.kube.Get(ctx, client.ObjectKey{Name: name}, nc); apierrors.IsNotFound(err) {
			continue
		} else if err != nil {
			return nil, err
		}
		if nc.Status.NodeName == "" {
			idle = append(idle, name)
			continue
		}
		var pods corev1.PodList
		if err := s.kube.List(ctx, &pods, client.MatchingFields{"spec.nodeName": nc.Status.NodeName}); err != nil {
			return nil, err
		}
		if len(pods.Items) == 0 {
			idle = append(idle, name)
		}
	}
	return idle, nil
}
