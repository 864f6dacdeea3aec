package fake

import "testing"

func TestPolicyEvaluation(t *testing.T) {
	p, err := ParsePolicy([]byte(`{"Version":"2012-10-17","Statement":[
	  {"Sid":"Tagged","Effect":"Allow","Action":"ec2:Create*","Resource":"arn:aws:ec2:us-west-2:*:instance/*",
	   "Condition":{"StringEquals":{"aws:RequestTag/kubernetes.io/cluster/prod":"owned"},"StringLike":{"aws:RequestTag/karpenter.sh/nodepool":"*"}}},
	  {"Sid":"Keys","Effect":"Allow","Action":"ec2:CreateTags","Resource":"*",
	   "Condition":{"ForAllValues:StringEquals":{"aws:TagKeys":["Name","karpenter.sh/nodeclaim"]},"StringEqualsIfExists":{"aws:RequestTag/eks:eks-cluster-name":"prod"}}},
	  {"Sid":"Any","Effect":"Allow","Action":"ec2:DeleteTags","Resource":"*","Condition":{"ForAnyValue:StringLike":{"aws:TagKeys":["team*"]}}},
	  {"Sid":"NoProd","Effect":"Deny","Action":"ec2:CreateFleet","Resource":"*","Condition":{"StringEquals":{"aws:ResourceTag/env":"prod"}}},
	  {"Sid":"Fleet","Effect":"Allow","Action":"EC2:createfleet","Resource":"*"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	tagged := tagContext(map[string]string{"kubernetes.io/cluster/prod": "owned", "karpenter.sh/nodepool": "default"}, nil)
	for _, c := range []struct {
		name string
		r    AuthzRequest
		want bool
	}{
		{"tagged instance", AuthzRequest{"ec2:CreateFleet", "arn:aws:ec2:us-west-2:1:instance/*", tagged}, true},
		{"wildcard action", AuthzRequest{"ec2:CreateLaunchTemplate", "arn:aws:ec2:us-west-2:1:instance/*", tagged}, true},
		{"other region", AuthzRequest{"ec2:CreateVolume", "arn:aws:ec2:eu-west-1:1:instance/*", tagged}, false},
		{"untagged (the key is absent)", AuthzRequest{"ec2:CreateVolume", "arn:aws:ec2:us-west-2:1:instance/*", tagContext(nil, nil)}, false},
		{"wrong value", AuthzRequest{"ec2:CreateVolume", "arn:aws:ec2:us-west-2:1:instance/*", tagContext(map[string]string{"kubernetes.io/cluster/prod": "shared", "karpenter.sh/nodepool": "a"}, nil)}, false},
		{"missing nodepool", AuthzRequest{"ec2:CreateVolume", "arn:aws:ec2:us-west-2:1:instance/*", tagContext(map[string]string{"kubernetes.io/cluster/prod": "owned"}, nil)}, false},
		{"allowed tag keys", AuthzRequest{"ec2:CreateTags", "arn:x", tagContext(map[string]string{"Name": "n"}, nil)}, true},
		{"a key outside ForAllValues", AuthzRequest{"ec2:CreateTags", "arn:x", tagContext(map[string]string{"Name": "n", "team": "a"}, nil)}, false},
		{"IfExists present and wrong", AuthzRequest{"ec2:CreateTags", "arn:x", tagContext(map[string]string{"Name": "n", "eks:eks-cluster-name": "dev"}, nil)}, false},
		{"ForAnyValue matches", AuthzRequest{"ec2:DeleteTags", "arn:x", tagContext(map[string]string{"teamA": "x", "b": "y"}, nil)}, true},
		{"ForAnyValue with no keys", AuthzRequest{"ec2:DeleteTags", "arn:x", tagContext(nil, nil)}, false},
		{"explicit deny wins", AuthzRequest{"ec2:CreateFleet", "arn:x", tagContext(nil, map[string]string{"env": "prod"})}, false},
		{"case-insensitive action", AuthzRequest{"ec2:CreateFleet", "arn:x", tagContext(nil, map[string]string{"env": "dev"})}, true},
		{"no statement", AuthzRequest{"ec2:TerminateInstances", "arn:x", nil}, false},
	} {
		if got := p.Allows(c.r); got != c.want {
			t.Errorf("%s: Allows = %v, want %v", c.name, got, c.want)
		}
	}
	if _, err := ParsePolicy([]byte(`{"Statement":[{"Effect":"Allow","NotAction":"ec2:*","Resource":"*"}]}`)); err == nil {
		t.Errorf("a policy with NotAction parsed; the fake must refuse what it cannot evaluate")
	}
	if _, err := ParsePolicy([]byte(`{"Statement":[{"Effect":"Allow","Action":"ec2:*","Resource":"*","Condition":{"NumericLessThan":{"a":"1"}}}]}`)); err == nil {
		t.Errorf("a policy with NumericLessThan parsed")
	}
}
