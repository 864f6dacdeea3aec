package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/joist-dev/joist/api/aws/v1"
	v1 "github.com/joist-dev/joist/api/v1"
	awsprovider "github.com/joist-dev/joist/cloudprovider/aws"
)

// awsMain runs `joist aws <command>`; render is the only command.
func awsMain(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "render" {
		fmt.Fprintln(stderr, "usage: joist aws render -f ec2nodeclass.yaml [-f nodepool.yaml] --instance-type m5.large --cluster-name NAME --cluster-endpoint URL --cluster-ca-bundle B64 --cluster-cidr CIDR --kubernetes-version 1.33")
		return 2
	}
	if err := awsRender(args[1:], stdout); err != nil {
		fmt.Fprintln(stderr, "joist aws render:", err)
		return 1
	}
	return 0
}

type fileList []string

func (f *fileList) String() string     { return strings.Join(*f, ",") }
func (f *fileList) Set(v string) error { *f = append(*f, v); return nil }

// awsRender prints the AMI query, the launch template and the user data a node of the instance
// type would boot with, from an EC2NodeClass and a NodePool, without calling AWS.
func awsRender(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("joist aws render", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var files fileList
	var in awsprovider.RenderInput
	fs.Var(&files, "f", "YAML file with an EC2NodeClass and optionally a NodePool (repeatable; - reads stdin).")
	fs.StringVar(&in.InstanceType, "instance-type", "m5.large", "Instance type of the node.")
	fs.StringVar(&in.CapacityType, "capacity-type", "on-demand", "on-demand or spot.")
	fs.StringVar(&in.Image, "image", "", "AMI id to show in the launch template (default: a placeholder; the query says how it is found).")
	fs.StringVar(&in.ClusterName, "cluster-name", "my-cluster", "EKS cluster name.")
	fs.StringVar(&in.Cluster.Endpoint, "cluster-endpoint", "https://EXAMPLE.gr7.us-west-2.eks.amazonaws.com", "API server endpoint (aws eks describe-cluster --query cluster.endpoint).")
	fs.StringVar(&in.Cluster.CABundle, "cluster-ca-bundle", "Q0E=", "Base64 CA bundle (--query cluster.certificateAuthority.data).")
	fs.StringVar(&in.Cluster.ServiceCIDR, "cluster-cidr", "10.100.0.0/16", "Service CIDR (--query cluster.kubernetesNetworkConfig).")
	fs.StringVar(&in.Cluster.KubernetesVersion, "kubernetes-version", "1.33", "Kubernetes minor version (--query cluster.version).")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if len(files) == 0 {
		return errors.New("give the EC2NodeClass with -f ec2nodeclass.yaml")
	}
	classes, pools, err := readRenderInputs(files)
	if err != nil {
		return err
	}
	in.NodePool = &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	if len(pools) > 0 {
		in.NodePool = pools[0]
	}
	in.NodeClass, err = pickNodeClass(classes, in.NodePool)
	if err != nil {
		return err
	}
	r, err := awsprovider.Render(in)
	if err != nil {
		return err
	}
	for _, section := range []struct {
		title string
		v     any
	}{{"AMI query", r.AMIQuery}, {"Launch template (CreateLaunchTemplate input)", r.LaunchTemplate}} {
		data, err := yaml.Marshal(section.v)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "# %s\n%s\n", section.title, data)
	}
	fmt.Fprintf(out, "# User data (%s, decoded)\n%s", in.NodeClass.AMIFamily(), r.UserData)
	return nil
}

func readRenderInputs(files []string) ([]*awsv1.EC2NodeClass, []*v1.NodePool, error) {
	var classes []*awsv1.EC2NodeClass
	var pools []*v1.NodePool
	for _, f := range files {
		var data []byte
		var err error
		if f == "-" {
			data, err = io.ReadAll(os.Stdin)
		} else {
			data, err = os.ReadFile(f)
		}
		if err != nil {
			return nil, nil, err
		}
		r := utilyaml.NewYAMLReader(bufioReader(data))
		for {
			doc, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %w", f, err)
			}
			var meta metav1.TypeMeta
			if err := yaml.Unmarshal(doc, &meta); err != nil {
				return nil, nil, fmt.Errorf("%s: %w", f, err)
			}
			switch meta.Kind {
			case "EC2NodeClass":
				nc := &awsv1.EC2NodeClass{}
				if err := yaml.UnmarshalStrict(doc, nc); err != nil {
					return nil, nil, fmt.Errorf("%s: EC2NodeClass: %w", f, err)
				}
				classes = append(classes, nc)
			case "NodePool":
				np := &v1.NodePool{}
				if err := yaml.UnmarshalStrict(doc, np); err != nil {
					return nil, nil, fmt.Errorf("%s: NodePool: %w", f, err)
				}
				pools = append(pools, np)
			}
		}
	}
	return classes, pools, nil
}

// pickNodeClass is the EC2NodeClass the NodePool references, or the only one given.
func pickNodeClass(classes []*awsv1.EC2NodeClass, np *v1.NodePool) (*awsv1.EC2NodeClass, error) {
	if ref := np.Spec.Template.Spec.NodeClassRef; ref != nil {
		for _, nc := range classes {
			if nc.Name == ref.Name {
				return nc, nil
			}
		}
	}
	if len(classes) == 1 {
		return classes[0], nil
	}
	return nil, fmt.Errorf("found %d EC2NodeClasses and none named by NodePool %s's nodeClassRef", len(classes), np.Name)
}

func bufioReader(data []byte) *bufio.Reader { return bufio.NewReader(bytes.NewReader(data)) }
