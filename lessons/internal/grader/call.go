package grader

// Call: the student's plain Go functions (XavierBound, FromStateDict, …) through the same
// judge/worker split as the graphs (remote.go). The value crosses as JSON built by valueCodec:
// numbers exactly (floats as their shortest round-tripping text, NaN and ±Inf included), strings,
// bools, errors (their message), tensors, and structs, slices and maps of those.

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// Call runs fn, which calls the student's code, and returns its value. A panic stops the check
// with a message naming what. In a judge, fn is not called: the worker calls it with the
// student's code and the value comes back checked (a value of another type is a failure).
func Call[T any](l Lesson, t testing.TB, what string, fn func() T) T {
	t.Helper()
	s := mustSession()
	var zero T
	local := func() (T, string) {
		var v T
		if p := catch(func() { v = fn() }); p != nil {
			return zero, fmt.Sprintf("%s panicked: %v", what, p)
		}
		return v, ""
	}
	switch s.role {
	case roleJudge:
		resp, err := s.ask(request{Kind: "call", Test: t.Name(), What: what})
		if err != nil {
			l.Fatalf(t, "%s: not run: %v", what, err)
		}
		if resp.Fail != "" {
			l.Fatalf(t, "%s", resp.Fail)
		}
		var v T
		if err := decodeValue(resp.Value, reflect.ValueOf(&v).Elem()); err != nil {
			l.Fatalf(t, "%s gave a result the grader cannot read: %v", what, err)
		}
		return v
	case roleWorker:
		if _, err := s.next("call", t.Name(), what); err != nil {
			l.Fatalf(t, "%s: %v", what, err)
		}
		v, fail := local()
		if fail == "" {
			data, err := encodeValue(reflect.ValueOf(&v).Elem())
			if err != nil {
				fail = fmt.Sprintf("%s: the result cannot be sent to the grader: %v", what, err)
			} else {
				s.answer(response{Value: data})
				return v
			}
		}
		s.answer(response{Fail: fail})
		l.Fatalf(t, "%s", fail)
		return zero
	default:
		v, fail := local()
		if fail != "" {
			l.Fatalf(t, "%s", fail)
		}
		return v
	}
}

var (
	tensorType = reflect.TypeFor[*tensors.Tensor]()
	errorType  = reflect.TypeFor[error]()
)

// encodeValue turns v into JSON that decodeValue reads back into the same type.
func encodeValue(v reflect.Value) (json.RawMessage, error) {
	x, err := toJSONable(v, 0)
	if err != nil {
		return nil, err
	}
	return json.Marshal(x)
}

func toJSONable(v reflect.Value, depth int) (any, error) {
	if depth > 8 {
		return nil, errors.New("value nested too deeply")
	}
	t := v.Type()
	switch {
	case t == tensorType:
		w, err := toWire(v.Interface().(*tensors.Tensor))
		return w, err
	case t == errorType:
		if v.IsNil() {
			return nil, nil
		}
		return v.Interface().(error).Error(), nil
	}
	switch t.Kind() {
	case reflect.Bool:
		return v.Bool(), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.FormatUint(v.Uint(), 10), nil
	case reflect.Float32, reflect.Float64:
		return strconv.FormatFloat(v.Float(), 'g', -1, t.Bits()), nil
	case reflect.String:
		return v.String(), nil
	case reflect.Slice, reflect.Array:
		if t.Kind() == reflect.Slice && v.IsNil() {
			return nil, nil
		}
		out := make([]any, v.Len())
		for i := range out {
			x, err := toJSONable(v.Index(i), depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = x
		}
		return out, nil
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return nil, fmt.Errorf("map with %s keys", t.Key())
		}
		if v.IsNil() {
			return nil, nil
		}
		out := map[string]any{}
		for it := v.MapRange(); it.Next(); {
			x, err := toJSONable(it.Value(), depth+1)
			if err != nil {
				return nil, err
			}
			out[it.Key().String()] = x
		}
		return out, nil
	case reflect.Struct:
		out := map[string]any{}
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				return nil, fmt.Errorf("%s has an unexported field %s", t, f.Name)
			}
			x, err := toJSONable(v.Field(i), depth+1)
			if err != nil {
				return nil, err
			}
			out[f.Name] = x
		}
		return out, nil
	}
	return nil, fmt.Errorf("values of type %s cannot be sent", t)
}

// decodeValue reads data into v (settable), refusing anything that does not fit v's type.
func decodeValue(data json.RawMessage, v reflect.Value) error {
	var x any
	if err := json.Unmarshal(data, &x); err != nil {
		return err
	}
	return fromJSONable(x, v, 0)
}

func fromJSONable(x any, v reflect.Value, depth int) error {
	if depth > 8 {
		return errors.New("value nested too deeply")
	}
	t := v.Type()
	mismatch := func() error { return fmt.Errorf("expected a %s, got %T", t, x) }
	switch {
	case t == tensorType:
		if x == nil {
			v.SetZero()
			return nil
		}
		raw, err := json.Marshal(x)
		if err != nil {
			return err
		}
		var w wireTensor
		if err := json.Unmarshal(raw, &w); err != nil {
			return err
		}
		tt, err := fromWire(w)
		if err != nil {
			return err
		}
		if tt != nil {
			v.Set(reflect.ValueOf(tt))
		} else {
			v.SetZero()
		}
		return nil
	case t == errorType:
		switch s := x.(type) {
		case nil:
			v.SetZero()
		case string:
			v.Set(reflect.ValueOf(errors.New(s)))
		default:
			return mismatch()
		}
		return nil
	}
	switch t.Kind() {
	case reflect.Bool:
		b, ok := x.(bool)
		if !ok {
			return mismatch()
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		s, ok := x.(string)
		n, err := strconv.ParseInt(s, 10, t.Bits())
		if !ok || err != nil {
			return mismatch()
		}
		v.SetInt(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		s, ok := x.(string)
		n, err := strconv.ParseUint(s, 10, t.Bits())
		if !ok || err != nil {
			return mismatch()
		}
		v.SetUint(n)
	case reflect.Float32, reflect.Float64:
		s, ok := x.(string)
		f, err := strconv.ParseFloat(s, t.Bits())
		if !ok || (err != nil && !math.IsInf(f, 0)) {
			return mismatch()
		}
		v.SetFloat(f)
	case reflect.String:
		s, ok := x.(string)
		if !ok {
			return mismatch()
		}
		v.SetString(s)
	case reflect.Slice, reflect.Array:
		if x == nil && t.Kind() == reflect.Slice {
			v.SetZero()
			return nil
		}
		list, ok := x.([]any)
		if !ok || (t.Kind() == reflect.Array && len(list) != t.Len()) || len(list) > 1<<20 {
			return mismatch()
		}
		if t.Kind() == reflect.Slice {
			v.Set(reflect.MakeSlice(t, len(list), len(list)))
		}
		for i, e := range list {
			if err := fromJSONable(e, v.Index(i), depth+1); err != nil {
				return fmt.Errorf("[%d]: %w", i, err)
			}
		}
	case reflect.Map:
		if x == nil {
			v.SetZero()
			return nil
		}
		m, ok := x.(map[string]any)
		if !ok || t.Key().Kind() != reflect.String {
			return mismatch()
		}
		v.Set(reflect.MakeMapWithSize(t, len(m)))
		for k, e := range m {
			ev := reflect.New(t.Elem()).Elem()
			if err := fromJSONable(e, ev, depth+1); err != nil {
				return fmt.Errorf("[%q]: %w", k, err)
			}
			v.SetMapIndex(reflect.ValueOf(k).Convert(t.Key()), ev)
		}
	case reflect.Struct:
		m, ok := x.(map[string]any)
		if !ok {
			return mismatch()
		}
		for i := range t.NumField() {
			f := t.Field(i)
			e, present := m[f.Name]
			if !present || !f.IsExported() {
				return fmt.Errorf("%s: field %s missing", t, f.Name)
			}
			if err := fromJSONable(e, v.Field(i), depth+1); err != nil {
				return fmt.Errorf("%s: %w", f.Name, err)
			}
		}
		if len(m) != t.NumField() {
			return fmt.Errorf("%s: unexpected fields", t)
		}
	default:
		return fmt.Errorf("values of type %s cannot be received", t)
	}
	return nil
}
