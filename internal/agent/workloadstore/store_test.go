package workloadstore

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestSaveLoadRemove(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "workloads"))
	if err != nil {
		t.Fatal(err)
	}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "d1"}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To(int32(3))}}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-abc", Namespace: "default", UID: "r1"}}
	for _, r := range []Record{{Kind: KindReplicaSet, ReplicaSet: rs}, {Kind: KindDeployment, Deployment: d, Source: "/x/web.yaml"}} {
		if err := s.Save(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Save(Record{Kind: KindDeployment, Deployment: &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{UID: "../x"}}}); err == nil {
		t.Fatal("a uid that is not a file name was saved")
	}
	info, err := os.Stat(filepath.Join(s.dir, "Deployment-d1.json"))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("record file: %v %v, want mode 0600", info, err)
	}
	records, problems := s.Load()
	if len(problems) > 0 || len(records) != 2 || records[0].Kind != KindDeployment || *records[0].Deployment.Spec.Replicas != 3 || records[0].Source != "/x/web.yaml" {
		t.Fatalf("Load = %+v, %v", records, problems)
	}
	if err := s.Remove(KindDeployment, "d1"); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(KindDeployment, "d1"); err != nil {
		t.Fatalf("removing a removed record: %v", err)
	}
	if records, _ := s.Load(); len(records) != 1 {
		t.Fatalf("after Remove: %d records, want 1", len(records))
	}
}

func TestLoadSetsAsideWhatItCannotRead(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(s.dir, "Deployment-x.json")
	if err := os.WriteFile(bad, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	records, problems := s.Load()
	if len(records) != 0 || len(problems) != 1 || !strings.Contains(problems[0].Error(), "Deployment-x.json") {
		t.Fatalf("Load = %v, %v; want the file named", records, problems)
	}
	if data, err := os.ReadFile(bad + ".unreadable"); err != nil || string(data) != "{not json" {
		t.Fatalf("the unreadable record was not kept aside: %q %v", data, err)
	}
}

func TestDaemonSetRecord(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "workloads"))
	if err != nil {
		t.Fatal(err)
	}
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "default", UID: "ds1"}}
	if err := s.Save(Record{Kind: KindDaemonSet, DaemonSet: ds, Source: "/x/ds.yaml"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Save(Record{Kind: KindDaemonSet, DaemonSet: ds, ReplicaSet: &appsv1.ReplicaSet{}}); err == nil {
		t.Error("a record holding two objects was saved")
	}
	records, problems := s.Load()
	if len(problems) != 0 || len(records) != 1 || records[0].DaemonSet == nil || records[0].DaemonSet.Name != "agent" || records[0].UID() != "ds1" {
		t.Fatalf("loaded %+v, %v", records, problems)
	}
	if err := s.Remove(KindDaemonSet, "ds1"); err != nil {
		t.Fatal(err)
	}
}

// A StatefulSet's record holds its ControllerRevisions; a record that
// names another kind's object is set aside.
func TestStatefulSetRecord(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "workloads"))
	if err != nil {
		t.Fatal(err)
	}
	set := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default", UID: "s1"}}
	rev := appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "db-abc"}, Revision: 1}
	if err := s.Save(Record{Kind: KindStatefulSet, StatefulSet: set, Revisions: []appsv1.ControllerRevision{rev}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Save(Record{Kind: KindStatefulSet, StatefulSet: set, ReplicaSet: &appsv1.ReplicaSet{}}); err == nil {
		t.Fatal("a record holding two objects was saved")
	}
	records, problems := s.Load()
	if len(problems) > 0 || len(records) != 1 || records[0].StatefulSet.Name != "db" || len(records[0].Revisions) != 1 || records[0].Revisions[0].Name != "db-abc" {
		t.Fatalf("Load = %+v, %v", records, problems)
	}
}

func TestJobAndCronJobRecords(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "tick-1", UID: "j1"}}
	cj := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "tick", UID: "c1"}, Spec: batchv1.CronJobSpec{Schedule: "@hourly"}}
	for _, r := range []Record{{Kind: KindJob, Job: job, Counted: []string{"p1", "p2"}}, {Kind: KindCronJob, CronJob: cj}} {
		if err := s.Save(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Save(Record{Kind: KindJob, Job: job, CronJob: cj}); err == nil {
		t.Fatal("a record holding two objects was saved")
	}
	if err := s.Save(Record{Kind: KindCronJob, Job: job}); err == nil {
		t.Fatal("a Job saved as a CronJob")
	}
	records, problems := s.Load()
	if len(problems) > 0 || len(records) != 2 || records[0].Kind != KindCronJob || records[0].CronJob.Spec.Schedule != "@hourly" ||
		records[1].Kind != KindJob || strings.Join(records[1].Counted, ",") != "p1,p2" {
		t.Fatalf("Load = %+v, %v; want the CronJob (owner) first, then the Job with its counted pods", records, problems)
	}
}
