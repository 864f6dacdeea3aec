package ec2

import (
	"encoding/json"
	"strings"
)

// awsLabelPrefix is left out of label keys in the file (it would be a third of its size).
const awsLabelPrefix = "karpenter.k8s.aws/"

type infoJSON Info

// MarshalJSON writes karpenter.k8s.aws/ label keys without their prefix.
func (in *Info) MarshalJSON() ([]byte, error) {
	out := infoJSON(*in)
	out.Labels = make(map[string]string, len(in.Labels))
	for k, v := range in.Labels {
		out.Labels[strings.TrimPrefix(k, awsLabelPrefix)] = v
	}
	return json.Marshal(out)
}

// UnmarshalJSON restores the karpenter.k8s.aws/ prefix of label keys without a domain.
func (in *Info) UnmarshalJSON(data []byte) error {
	var raw infoJSON
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	*in = Info(raw)
	in.Labels = make(map[string]string, len(raw.Labels))
	for k, v := range raw.Labels {
		if !strings.Contains(k, "/") {
			k = awsLabelPrefix + k
		}
		in.Labels[k] = v
	}
	return nil
}
