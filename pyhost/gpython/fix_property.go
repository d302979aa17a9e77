package gpython

import (
	"github.com/go-python/gpython/py"
)

// property, which gpython lacks (@property raised NameError): CPython's
// built-in data descriptor. gpython's attribute lookup calls the __get__,
// __set__ and __delete__ of a Go type found in an object's class (an
// instance's own attributes are looked at first, but a property's setter
// keeps its name out of them), so property is a Go type here; a class's
// attribute read through the class (A.x) is the property itself, as in
// CPython.

// propertyType is the type of toolhost's property objects.
var propertyType = py.NewType("property", "Property attribute.")

// pyProperty is property(fget, fset, fdel, doc).
type pyProperty struct {
	fget, fset, fdel, doc py.Object
	// name is the attribute's name in the class that defined it
	// (CPython's __set_name__), for the messages of its errors; "" when
	// the property was put in a class after the class was made.
	name string
}

// Type implements py.Object.
func (p *pyProperty) Type() *py.Type { return propertyType }

func init() {
	propertyType.New = propertyNew
	for name, pick := range map[string]func(p *pyProperty) py.Object{
		"fget":    func(p *pyProperty) py.Object { return p.fget },
		"fset":    func(p *pyProperty) py.Object { return p.fset },
		"fdel":    func(p *pyProperty) py.Object { return p.fdel },
		"__doc__": func(p *pyProperty) py.Object { return p.doc },
	} {
		pick := pick
		propertyType.Dict[name] = &py.Property{Fget: func(self py.Object) (py.Object, error) {
			return pick(self.(*pyProperty)), nil
		}}
	}
	// getter, setter and deleter give a copy with one function replaced.
	for i, name := range []string{"getter", "setter", "deleter"} {
		i := i
		propertyType.Dict[name] = py.MustNewMethod(name, func(self, fn py.Object) (py.Object, error) {
			p := *self.(*pyProperty)
			switch i {
			case 0:
				p.fget = fn
				if p.doc == py.None {
					p.doc = docOf(fn)
				}
			case 1:
				p.fset = fn
			case 2:
				p.fdel = fn
			}
			return &p, nil
		}, 0, "")
	}
}

// propertyNew is property(fget=None, fset=None, fdel=None, doc=None).
func propertyNew(_ *py.Type, args py.Tuple, kwargs py.StringDict) (py.Object, error) {
	if len(args) > 4 {
		return nil, py.ExceptionNewf(py.TypeError, "property() takes at most 4 arguments (%d given)", len(args))
	}
	p := &pyProperty{fget: py.None, fset: py.None, fdel: py.None, doc: py.None}
	fields := []*py.Object{&p.fget, &p.fset, &p.fdel, &p.doc}
	names := []string{"fget", "fset", "fdel", "doc"}
	for i, a := range args {
		*fields[i] = a
	}
	for k, v := range kwargs {
		i := 0
		for i < len(names) && names[i] != k {
			i++
		}
		if i == len(names) {
			return nil, py.ExceptionNewf(py.TypeError, "'%s' is an invalid keyword argument for property()", k)
		}
		if i < len(args) {
			return nil, py.ExceptionNewf(py.TypeError, "argument for property() given by name ('%s') and position (%d)", k, i+1)
		}
		*fields[i] = v
	}
	if p.doc == py.None && p.fget != py.None {
		p.doc = docOf(p.fget)
	}
	return p, nil
}

// docOf is a function's __doc__, None if it has none.
func docOf(fn py.Object) py.Object {
	if f, ok := fn.(*py.Function); ok && f.Doc != nil {
		return f.Doc
	}
	return py.None
}

// missing is the AttributeError of a property without the function asked
// for.
func (p *pyProperty) missing(instance py.Object, what string) error {
	cls := instance.Type().Qualname // CPython names the class by its qualified name here
	if cls == "" {
		cls = instance.Type().Name
	}
	if p.name == "" {
		return py.ExceptionNewf(py.AttributeError, "property of '%s' object has no %s", cls, what)
	}
	return py.ExceptionNewf(py.AttributeError, "property '%s' of '%s' object has no %s", p.name, cls, what)
}

// M__get__ implements py.I__get__: the getter's value for an instance,
// the property itself through its class.
func (p *pyProperty) M__get__(instance, owner py.Object) (py.Object, error) {
	if instance == nil || instance == py.None || instance == owner {
		return p, nil
	}
	if p.fget == py.None {
		return nil, p.missing(instance, "getter")
	}
	return py.Call(p.fget, py.Tuple{instance}, nil)
}

// M__set__ implements py.I__set__.
func (p *pyProperty) M__set__(instance, value py.Object) (py.Object, error) {
	if p.fset == py.None {
		return nil, p.missing(instance, "setter")
	}
	if _, err := py.Call(p.fset, py.Tuple{instance, value}, nil); err != nil {
		return nil, err
	}
	return py.None, nil
}

// M__delete__ implements py.I__delete__.
func (p *pyProperty) M__delete__(instance py.Object) (py.Object, error) {
	if p.fdel == py.None {
		return nil, p.missing(instance, "deleter")
	}
	if _, err := py.Call(p.fdel, py.Tuple{instance}, nil); err != nil {
		return nil, err
	}
	return py.None, nil
}

var (
	_ py.I__get__    = (*pyProperty)(nil)
	_ py.I__set__    = (*pyProperty)(nil)
	_ py.I__delete__ = (*pyProperty)(nil)
)

// buildClass wraps __build_class__: the properties of a class just made
// learn their names, as CPython's __set_name__ tells them.
func buildClass(orig py.Object) py.Object {
	return py.MustNewMethod("__build_class__", func(_ py.Object, args py.Tuple, kwargs py.StringDict) (py.Object, error) {
		cls, err := py.Call(orig, args, kwargs)
		if err != nil {
			return nil, err
		}
		if t, ok := cls.(*py.Type); ok {
			for name, v := range t.Dict {
				if p, ok := v.(*pyProperty); ok {
					p.name = name
				}
			}
		}
		return cls, nil
	}, 0, "")
}
