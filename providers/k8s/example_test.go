package k8s_test

import (
	"fmt"
	"log"

	"github.com/benchflow/benchflow/providers"
	"github.com/benchflow/benchflow/providers/k8s"
)

// Render prints what a trial would apply, without a cluster: here an
// nginx Deployment and a NodePort Service in a given namespace.
func ExampleProvider_Render() {
	p, err := k8s.New("cluster", k8s.Config{Namespace: "bench", Expose: k8s.ExposeNodePort, CPU: "1"})
	if err != nil {
		log.Fatal(err)
	}
	out, err := p.Render(&providers.ProvisionRequest{
		RunID:   "20261130T044500Z-3f9c",
		TrialID: "c01-r1",
		Service: providers.ServiceSpec{
			Name:  "nginx",
			Image: "nginx:alpine",
			Ports: []providers.Port{{Name: "http", Container: 80}},
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(string(out))
	// Output:
	// apiVersion: apps/v1
	// kind: Deployment
	// metadata:
	//   labels:
	//     dev.benchflow.managed: "true"
	//     dev.benchflow.run: 20261130T044500Z-3f9c
	//     dev.benchflow.service: nginx
	//     dev.benchflow.trial: c01-r1
	//   name: nginx
	//   namespace: bench
	// spec:
	//   replicas: 1
	//   selector:
	//     matchLabels:
	//       dev.benchflow.run: 20261130T044500Z-3f9c
	//       dev.benchflow.service: nginx
	//       dev.benchflow.trial: c01-r1
	//   strategy: {}
	//   template:
	//     metadata:
	//       labels:
	//         dev.benchflow.managed: "true"
	//         dev.benchflow.run: 20261130T044500Z-3f9c
	//         dev.benchflow.service: nginx
	//         dev.benchflow.trial: c01-r1
	//     spec:
	//       containers:
	//       - image: nginx:alpine
	//         name: nginx
	//         ports:
	//         - containerPort: 80
	//           name: http
	//           protocol: TCP
	//         resources:
	//           limits:
	//             cpu: "1"
	//           requests:
	//             cpu: "1"
	//       terminationGracePeriodSeconds: 5
	// ---
	// apiVersion: v1
	// kind: Service
	// metadata:
	//   labels:
	//     dev.benchflow.managed: "true"
	//     dev.benchflow.run: 20261130T044500Z-3f9c
	//     dev.benchflow.service: nginx
	//     dev.benchflow.trial: c01-r1
	//   name: nginx
	//   namespace: bench
	// spec:
	//   ports:
	//   - name: http
	//     port: 80
	//     protocol: TCP
	//     targetPort: 80
	//   selector:
	//     dev.benchflow.run: 20261130T044500Z-3f9c
	//     dev.benchflow.service: nginx
	//     dev.benchflow.trial: c01-r1
	//   type: NodePort
}
