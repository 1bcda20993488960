package daemonset

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/history"
	"github.com/kcm/kcm/internal/index"
	"github.com/kcm/kcm/internal/ownership"
)

var dsGVK = appsv1.SchemeGroupVersion.WithKind("DaemonSet")

// templatePatch is upstream's getPatch: the revision Data is a strategic merge patch that
// replaces spec.template, serialised as upstream does so that revisions compare equal.
func templatePatch(ds *appsv1.DaemonSet) ([]byte, error) {
	raw, err := json.Marshal(ds)
	if err != nil {
		return nil, err
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, err
	}
	template := obj["spec"].(map[string]any)["template"].(map[string]any)
	template["$patch"] = "replace"
	return json.Marshal(map[string]any{"spec": map[string]any{"template": template}})
}

// revisionHash is the hash pods of rev carry: its controller-revision-hash label, else the
// history hash label.
func revisionHash(rev *appsv1.ControllerRevision) string {
	if h := rev.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]; h != "" {
		return h
	}
	return rev.Labels[history.HashLabel]
}

// constructHistory is upstream's constructHistory: it claims the DaemonSet's revisions,
// finds (or creates) the one holding the current template, gives it the highest revision
// number, and returns it with the others. collisionCount is updated in ds.Status when a
// hash collision forced a new name; the caller writes it with status.
func (r *Reconciler) constructHistory(ctx context.Context, ds *appsv1.DaemonSet, selector labels.Selector) (*appsv1.ControllerRevision, []*appsv1.ControllerRevision, error) {
	candidates, err := history.List(ctx, r.Client, ds, selector)
	if err != nil {
		return nil, nil, err
	}
	claimer := &ownership.Claimer{Client: r.Client, Fresh: r.APIReader, Owner: ds, OwnerGVK: dsGVK, Selector: selector}
	revs, err := ownership.Claim(ctx, claimer, candidates)
	if err != nil {
		return nil, nil, err
	}
	patch, err := templatePatch(ds)
	if err != nil {
		return nil, nil, err
	}
	want := &appsv1.ControllerRevision{Data: runtime.RawExtension{Raw: patch}}
	var current, old []*appsv1.ControllerRevision
	for _, rev := range revs {
		if history.Equal(rev, want) {
			current = append(current, rev)
		} else {
			old = append(old, rev)
		}
	}
	next := history.Next(old)
	var cur *appsv1.ControllerRevision
	if len(current) == 0 {
		// Creation needs a counter; status keeps collisionCount unset until a collision.
		count := new(int32)
		if ds.Status.CollisionCount != nil {
			*count = *ds.Status.CollisionCount
		}
		lbls := map[string]string{}
		for k, v := range ds.Spec.Template.Labels {
			lbls[k] = v
		}
		// Named "<ds>-<template hash>" and labelled controller-revision-hash, as upstream's
		// snapshot: the same template gets the same name under either controller manager.
		rev := &appsv1.ControllerRevision{
			ObjectMeta: metav1.ObjectMeta{
				Labels:          lbls,
				Annotations:     ds.Annotations,
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ds, dsGVK)},
			},
			Data:     want.Data,
			Revision: next,
		}
		templateHash := func(cc *int32) string {
			if *cc == 0 && ds.Status.CollisionCount == nil {
				cc = nil // upstream hashes an unset collisionCount, which differs from 0
			}
			return history.TemplateHash(&ds.Spec.Template, cc)
		}
		cur, err = history.CreateNamed(ctx, r.Client, ds, rev, count, appsv1.DefaultDaemonSetUniqueLabelKey, templateHash)
		if err != nil {
			return nil, nil, err
		}
		if ds.Status.CollisionCount != nil || *count > 0 {
			ds.Status.CollisionCount = count
		}
		return cur, old, nil
	}
	// Duplicates of the current revision (e.g. from a lost race): keep the newest.
	history.Sort(current)
	cur = current[len(current)-1]
	for _, dup := range current[:len(current)-1] {
		// Pods of the duplicate move to the kept revision's hash first, as upstream.
		if err := r.relabelPods(ctx, ds, revisionHash(dup), revisionHash(cur)); err != nil {
			return nil, nil, err
		}
		if err := r.Client.Delete(ctx, dup); client.IgnoreNotFound(err) != nil {
			return nil, nil, fmt.Errorf("deleting duplicate ControllerRevision %s: %w", dup.Name, err)
		}
	}
	if cur.Revision < next {
		if cur, err = history.SetRevision(ctx, r.Client, cur, next); err != nil {
			return nil, nil, err
		}
	}
	return cur, old, nil
}

// relabelPods gives the DaemonSet's pods labelled with hash from the hash to.
func (r *Reconciler) relabelPods(ctx context.Context, ds *appsv1.DaemonSet, from, to string) error {
	if from == "" || from == to {
		return nil
	}
	list := &corev1.PodList{}
	if err := r.Client.List(ctx, list, client.InNamespace(ds.Namespace),
		client.MatchingFields{index.ControllerUID: string(ds.UID)},
		client.MatchingLabels{appsv1.DefaultDaemonSetUniqueLabelKey: from}); err != nil {
		return err
	}
	for i := range list.Items {
		p := &list.Items[i]
		patched := p.DeepCopy()
		patched.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] = to
		if err := r.Client.Patch(ctx, patched, client.MergeFrom(p)); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("relabelling pod %s: %w", p.Name, err)
		}
	}
	return nil
}

// cleanupHistory deletes the oldest old revisions beyond revisionHistoryLimit that no live
// pod carries, as upstream.
func (r *Reconciler) cleanupHistory(ctx context.Context, ds *appsv1.DaemonSet, old []*appsv1.ControllerRevision, liveHashes map[string]bool) error {
	limit := 10
	if ds.Spec.RevisionHistoryLimit != nil {
		limit = int(*ds.Spec.RevisionHistoryLimit)
	}
	toKill := len(old) - limit
	if toKill <= 0 {
		return nil
	}
	sort.SliceStable(old, func(i, j int) bool { return old[i].Revision < old[j].Revision })
	for _, rev := range old {
		if toKill <= 0 {
			break
		}
		if liveHashes[revisionHash(rev)] {
			continue
		}
		err := r.Client.Delete(ctx, rev, client.Preconditions{UID: &rev.UID})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting ControllerRevision %s: %w", rev.Name, err)
		}
		toKill--
	}
	return nil
}
