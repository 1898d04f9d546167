package kube

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// apiClient is the part of the Kubernetes API the backend uses: pods (and
// their exec subresource) and network policies, on REST clients whose
// scheme holds just those groups. The generated clientset would register
// every API group of Kubernetes at process start, which cost every
// otcurate command about 25 ms of start-up whether it used Kubernetes or
// not.
type apiClient struct {
	core   *rest.RESTClient // /api/v1
	net    *rest.RESTClient // /apis/networking.k8s.io/v1
	params runtime.ParameterCodec
}

func newAPIClient(cfg *rest.Config) (*apiClient, error) {
	sch := runtime.NewScheme()
	if err := corev1.AddToScheme(sch); err != nil {
		return nil, err
	}
	if err := networkingv1.AddToScheme(sch); err != nil {
		return nil, err
	}
	metav1.AddToGroupVersion(sch, schema.GroupVersion{Version: "v1"})
	codecs := serializer.NewCodecFactory(sch)
	client := func(apiPath string, gv schema.GroupVersion) (*rest.RESTClient, error) {
		c := rest.CopyConfig(cfg)
		c.APIPath, c.GroupVersion = apiPath, &gv
		c.NegotiatedSerializer = codecs.WithoutConversion()
		if c.UserAgent == "" {
			c.UserAgent = rest.DefaultKubernetesUserAgent()
		}
		return rest.RESTClientFor(c)
	}
	core, err := client("/api", corev1.SchemeGroupVersion)
	if err != nil {
		return nil, err
	}
	net, err := client("/apis", networkingv1.SchemeGroupVersion)
	if err != nil {
		return nil, err
	}
	return &apiClient{core: core, net: net, params: runtime.NewParameterCodec(sch)}, nil
}

// pods are the pod calls of one namespace, shaped like the generated
// client's.
type pods struct {
	c  *apiClient
	ns string
}

func (c *apiClient) pods(ns string) pods { return pods{c, ns} }

func (p pods) Create(ctx context.Context, pod *corev1.Pod, opts metav1.CreateOptions) (*corev1.Pod, error) {
	out := &corev1.Pod{}
	err := p.c.core.Post().Namespace(p.ns).Resource("pods").VersionedParams(&opts, p.c.params).Body(pod).Do(ctx).Into(out)
	return out, err
}

func (p pods) Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Pod, error) {
	out := &corev1.Pod{}
	err := p.c.core.Get().Namespace(p.ns).Resource("pods").Name(name).VersionedParams(&opts, p.c.params).Do(ctx).Into(out)
	return out, err
}

func (p pods) List(ctx context.Context, opts metav1.ListOptions) (*corev1.PodList, error) {
	out := &corev1.PodList{}
	err := p.c.core.Get().Namespace(p.ns).Resource("pods").VersionedParams(&opts, p.c.params).Do(ctx).Into(out)
	return out, err
}

func (p pods) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	return p.c.core.Get().Namespace(p.ns).Resource("pods").VersionedParams(&opts, p.c.params).Watch(ctx)
}

func (p pods) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	return p.c.core.Delete().Namespace(p.ns).Resource("pods").Name(name).Body(&opts).Do(ctx).Error()
}

// execRequest is the pods/exec request of a container.
func (p pods) execRequest(name string, opts *corev1.PodExecOptions) *rest.Request {
	return p.c.core.Post().Namespace(p.ns).Resource("pods").Name(name).SubResource("exec").VersionedParams(opts, p.c.params)
}

// createNetworkPolicy creates np in ns.
func (c *apiClient) createNetworkPolicy(ctx context.Context, ns string, np *networkingv1.NetworkPolicy) error {
	return c.net.Post().Namespace(ns).Resource("networkpolicies").VersionedParams(&metav1.CreateOptions{}, c.params).Body(np).Do(ctx).Error()
}

// nodeArch is the kubernetes.io/arch label of a node.
func (c *apiClient) nodeArch(ctx context.Context, name string) (string, error) {
	out := &corev1.Node{}
	if err := c.core.Get().Resource("nodes").Name(name).Do(ctx).Into(out); err != nil {
		return "", err
	}
	return out.Labels[corev1.LabelArchStable], nil
}
