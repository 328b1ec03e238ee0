package testutil

import (
	"reflect"
	"unsafe"
)

// DeepCopy returns a copy of v that shares nothing with it that can be
// written through: what pointers, slices, maps and interfaces reach is
// copied, unexported fields included, and a value reached twice is copied
// once. Functions and channels are shared. A test keeps it to compare v
// with after code that must not change v (cmp.Diff with an Exporter).
func DeepCopy[T any](v T) T {
	src := reflect.ValueOf(&v).Elem()
	dst := reflect.New(src.Type()).Elem()
	c := copier{seen: map[uintptr]reflect.Value{}}
	c.copy(dst, src)
	return dst.Interface().(T)
}

type copier struct {
	seen map[uintptr]reflect.Value // pointers copied, by address
}

// open makes an addressable value readable and settable, unexported
// fields included.
func open(v reflect.Value) reflect.Value {
	if v.CanAddr() {
		return reflect.NewAt(v.Type(), unsafe.Pointer(v.UnsafeAddr())).Elem()
	}
	return v
}

func (c *copier) copy(dst, src reflect.Value) {
	dst, src = open(dst), open(src)
	switch src.Kind() {
	case reflect.Pointer:
		if src.IsNil() {
			return
		}
		if done, ok := c.seen[src.Pointer()]; ok {
			dst.Set(done)
			return
		}
		p := reflect.New(src.Type().Elem())
		c.seen[src.Pointer()] = p
		c.copy(p.Elem(), src.Elem())
		dst.Set(p)
	case reflect.Struct:
		for i := range src.NumField() {
			c.copy(dst.Field(i), src.Field(i))
		}
	case reflect.Slice:
		if src.IsNil() {
			return
		}
		dst.Set(reflect.MakeSlice(src.Type(), src.Len(), src.Len()))
		fallthrough
	case reflect.Array:
		for i := range src.Len() {
			c.copy(dst.Index(i), src.Index(i))
		}
	case reflect.Map:
		if src.IsNil() {
			return
		}
		m := reflect.MakeMapWithSize(src.Type(), src.Len())
		for it := src.MapRange(); it.Next(); {
			k, v := reflect.New(src.Type().Key()).Elem(), reflect.New(src.Type().Elem()).Elem()
			c.copy(k, addressable(it.Key()))
			c.copy(v, addressable(it.Value()))
			m.SetMapIndex(k, v)
		}
		dst.Set(m)
	case reflect.Interface:
		if src.IsNil() {
			return
		}
		v := reflect.New(src.Elem().Type()).Elem()
		c.copy(v, addressable(src.Elem()))
		dst.Set(v)
	default:
		dst.Set(src)
	}
}

// addressable is a copy of v that can be addressed (a map's key or
// value, an interface's value).
func addressable(v reflect.Value) reflect.Value {
	a := reflect.New(v.Type()).Elem()
	a.Set(v)
	return a
}
