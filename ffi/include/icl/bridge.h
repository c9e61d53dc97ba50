#pragma once
#include "icl/progress.h"
#include <algorithm>
#include <array>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#if __cplusplus >= 201703L
#include <string_view>
#endif
#if __cplusplus >= 202002L
#include <ranges>
#endif

#ifdef __clang__
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wdollar-in-identifier-extension"
#endif // __clang__

namespace rust {
inline namespace cxxbridge1 {
// #include "rust/cxx.h"

#ifndef CXXBRIDGE1_PANIC
#define CXXBRIDGE1_PANIC
template <typename Exception>
void panic [[noreturn]] (const char *msg);
#endif // CXXBRIDGE1_PANIC

struct unsafe_bitcopy_t;

namespace {
template <typename T>
class impl;
} // namespace

template <typename T>
::std::size_t size_of();
template <typename T>
::std::size_t align_of();

#ifndef CXXBRIDGE1_RUST_STRING
#define CXXBRIDGE1_RUST_STRING
class String final {
public:
  String() noexcept;
  String(const String &) noexcept;
  String(String &&) noexcept;
  ~String() noexcept;

  String(const std::string &);
  String(const char *);
  String(const char *, std::size_t);
  String(const char16_t *);
  String(const char16_t *, std::size_t);
#ifdef __cpp_char8_t
  String(const char8_t *s);
  String(const char8_t *s, std::size_t len);
#endif

  static String lossy(const std::string &) noexcept;
  static String lossy(const char *) noexcept;
  static String lossy(const char *, std::size_t) noexcept;
  static String lossy(const char16_t *) noexcept;
  static String lossy(const char16_t *, std::size_t) noexcept;

  String &operator=(const String &) & noexcept;
  String &operator=(String &&) & noexcept;

  explicit operator std::string() const;

  const char *data() const noexcept;
  char *data() noexcept;

  std::size_t size() const noexcept;
  std::size_t length() const noexcept;
  bool empty() const noexcept;

  const char *c_str() noexcept;

  std::size_t capacity() const noexcept;
  void reserve(size_t new_cap) noexcept;

  using iterator = char *;
  iterator begin() noexcept;
  iterator end() noexcept;

  using const_iterator = const char *;
  const_iterator begin() const noexcept;
  const_iterator end() const noexcept;
  const_iterator cbegin() const noexcept;
  const_iterator cend() const noexcept;

  bool operator==(const String &) const noexcept;
  bool operator!=(const String &) const noexcept;
  bool operator<(const String &) const noexcept;
  bool operator<=(const String &) const noexcept;
  bool operator>(const String &) const noexcept;
  bool operator>=(const String &) const noexcept;

  void swap(String &) noexcept;

  String(unsafe_bitcopy_t, const String &) noexcept;

private:
  struct lossy_t;
  String(lossy_t, const char *, std::size_t) noexcept;
  String(lossy_t, const char16_t *, std::size_t) noexcept;
  friend void swap(String &lhs, String &rhs) noexcept { lhs.swap(rhs); }

  std::array<std::uintptr_t, 3> repr;
};
#endif // CXXBRIDGE1_RUST_STRING

#ifndef CXXBRIDGE1_RUST_STR
#define CXXBRIDGE1_RUST_STR
class Str final {
public:
  Str() noexcept;
  Str(const String &) noexcept;
  Str(const std::string &);
  Str(const char *);
  Str(const char *, std::size_t);

  Str &operator=(const Str &) & noexcept = default;

  explicit operator std::string() const;
#if __cplusplus >= 201703L
  explicit operator std::string_view() const;
#endif

  const char *data() const noexcept;
  std::size_t size() const noexcept;
  std::size_t length() const noexcept;
  bool empty() const noexcept;

  Str(const Str &) noexcept = default;
  ~Str() noexcept = default;

  using iterator = const char *;
  using const_iterator = const char *;
  const_iterator begin() const noexcept;
  const_iterator end() const noexcept;
  const_iterator cbegin() const noexcept;
  const_iterator cend() const noexcept;

  bool operator==(const Str &) const noexcept;
  bool operator!=(const Str &) const noexcept;
  bool operator<(const Str &) const noexcept;
  bool operator<=(const Str &) const noexcept;
  bool operator>(const Str &) const noexcept;
  bool operator>=(const Str &) const noexcept;

  void swap(Str &) noexcept;

private:
  class uninit;
  Str(uninit) noexcept;
  friend impl<Str>;

  std::array<std::uintptr_t, 2> repr;
};
#endif // CXXBRIDGE1_RUST_STR

#ifndef CXXBRIDGE1_RUST_SLICE
#define CXXBRIDGE1_RUST_SLICE
namespace detail {
template <bool>
struct copy_assignable_if {};

template <>
struct copy_assignable_if<false> {
  copy_assignable_if() noexcept = default;
  copy_assignable_if(const copy_assignable_if &) noexcept = default;
  copy_assignable_if &operator=(const copy_assignable_if &) & noexcept = delete;
  copy_assignable_if &operator=(copy_assignable_if &&) & noexcept = default;
};
} // namespace detail

template <typename T>
class Slice final
    : private detail::copy_assignable_if<std::is_const<T>::value> {
public:
  using value_type = T;

  Slice() noexcept;
  Slice(T *, std::size_t count) noexcept;

  template <typename C>
  explicit Slice(C &c) : Slice(c.data(), c.size()) {}

  Slice &operator=(const Slice<T> &) & noexcept = default;
  Slice &operator=(Slice<T> &&) & noexcept = default;

  T *data() const noexcept;
  std::size_t size() const noexcept;
  std::size_t length() const noexcept;
  bool empty() const noexcept;

  T &operator[](std::size_t n) const noexcept;
  T &at(std::size_t n) const;
  T &front() const noexcept;
  T &back() const noexcept;

  Slice(const Slice<T> &) noexcept = default;
  ~Slice() noexcept = default;

  class iterator;
  iterator begin() const noexcept;
  iterator end() const noexcept;

  void swap(Slice &) noexcept;

private:
  class uninit;
  Slice(uninit) noexcept;
  friend impl<Slice>;
  friend void sliceInit(void *, const void *, std::size_t) noexcept;
  friend void *slicePtr(const void *) noexcept;
  friend std::size_t sliceLen(const void *) noexcept;

  std::array<std::uintptr_t, 2> repr;
};

#ifdef __cpp_deduction_guides
template <typename C>
explicit Slice(C &c)
    -> Slice<std::remove_reference_t<decltype(*std::declval<C>().data())>>;
#endif // __cpp_deduction_guides

template <typename T>
class Slice<T>::iterator final {
public:
#if __cplusplus >= 202002L
  using iterator_category = std::contiguous_iterator_tag;
#else
  using iterator_category = std::random_access_iterator_tag;
#endif
  using value_type = T;
  using difference_type = std::ptrdiff_t;
  using pointer = typename std::add_pointer<T>::type;
  using reference = typename std::add_lvalue_reference<T>::type;

  reference operator*() const noexcept;
  pointer operator->() const noexcept;
  reference operator[](difference_type) const noexcept;

  iterator &operator++() noexcept;
  iterator operator++(int) noexcept;
  iterator &operator--() noexcept;
  iterator operator--(int) noexcept;

  iterator &operator+=(difference_type) noexcept;
  iterator &operator-=(difference_type) noexcept;
  iterator operator+(difference_type) const noexcept;
  friend inline iterator operator+(difference_type lhs, iterator rhs) noexcept {
    return rhs + lhs;
  }
  iterator operator-(difference_type) const noexcept;
  difference_type operator-(const iterator &) const noexcept;

  bool operator==(const iterator &) const noexcept;
  bool operator!=(const iterator &) const noexcept;
  bool operator<(const iterator &) const noexcept;
  bool operator<=(const iterator &) const noexcept;
  bool operator>(const iterator &) const noexcept;
  bool operator>=(const iterator &) const noexcept;

private:
  friend class Slice;
  void *pos;
  std::size_t stride;
};

template <typename T>
Slice<T>::Slice() noexcept {
  sliceInit(this, reinterpret_cast<void *>(align_of<T>()), 0);
}

template <typename T>
Slice<T>::Slice(T *s, std::size_t count) noexcept {
  assert(s != nullptr || count == 0);
  sliceInit(this,
            s == nullptr && count == 0
                ? reinterpret_cast<void *>(align_of<T>())
                : const_cast<typename std::remove_const<T>::type *>(s),
            count);
}

template <typename T>
T *Slice<T>::data() const noexcept {
  return reinterpret_cast<T *>(slicePtr(this));
}

template <typename T>
std::size_t Slice<T>::size() const noexcept {
  return sliceLen(this);
}

template <typename T>
std::size_t Slice<T>::length() const noexcept {
  return this->size();
}

template <typename T>
bool Slice<T>::empty() const noexcept {
  return this->size() == 0;
}

template <typename T>
T &Slice<T>::operator[](std::size_t n) const noexcept {
  assert(n < this->size());
  auto ptr = static_cast<char *>(slicePtr(this)) + size_of<T>() * n;
  return *reinterpret_cast<T *>(ptr);
}

template <typename T>
T &Slice<T>::at(std::size_t n) const {
  if (n >= this->size()) {
    panic<std::out_of_range>("rust::Slice index out of range");
  }
  return (*this)[n];
}

template <typename T>
T &Slice<T>::front() const noexcept {
  assert(!this->empty());
  return (*this)[0];
}

template <typename T>
T &Slice<T>::back() const noexcept {
  assert(!this->empty());
  return (*this)[this->size() - 1];
}

template <typename T>
typename Slice<T>::iterator::reference
Slice<T>::iterator::operator*() const noexcept {
  return *static_cast<T *>(this->pos);
}

template <typename T>
typename Slice<T>::iterator::pointer
Slice<T>::iterator::operator->() const noexcept {
  return static_cast<T *>(this->pos);
}

template <typename T>
typename Slice<T>::iterator::reference Slice<T>::iterator::operator[](
    typename Slice<T>::iterator::difference_type n) const noexcept {
  auto ptr = static_cast<char *>(this->pos) + this->stride * n;
  return *reinterpret_cast<T *>(ptr);
}

template <typename T>
typename Slice<T>::iterator &Slice<T>::iterator::operator++() noexcept {
  this->pos = static_cast<char *>(this->pos) + this->stride;
  return *this;
}

template <typename T>
typename Slice<T>::iterator Slice<T>::iterator::operator++(int) noexcept {
  auto ret = iterator(*this);
  this->pos = static_cast<char *>(this->pos) + this->stride;
  return ret;
}

template <typename T>
typename Slice<T>::iterator &Slice<T>::iterator::operator--() noexcept {
  this->pos = static_cast<char *>(this->pos) - this->stride;
  return *this;
}

template <typename T>
typename Slice<T>::iterator Slice<T>::iterator::operator--(int) noexcept {
  auto ret = iterator(*this);
  this->pos = static_cast<char *>(this->pos) - this->stride;
  return ret;
}

template <typename T>
typename Slice<T>::iterator &Slice<T>::iterator::operator+=(
    typename Slice<T>::iterator::difference_type n) noexcept {
  this->pos = static_cast<char *>(this->pos) + this->stride * n;
  return *this;
}

template <typename T>
typename Slice<T>::iterator &Slice<T>::iterator::operator-=(
    typename Slice<T>::iterator::difference_type n) noexcept {
  this->pos = static_cast<char *>(this->pos) - this->stride * n;
  return *this;
}

template <typename T>
typename Slice<T>::iterator Slice<T>::iterator::operator+(
    typename Slice<T>::iterator::difference_type n) const noexcept {
  auto ret = iterator(*this);
  ret.pos = static_cast<char *>(this->pos) + this->stride * n;
  return ret;
}

template <typename T>
typename Slice<T>::iterator Slice<T>::iterator::operator-(
    typename Slice<T>::iterator::difference_type n) const noexcept {
  auto ret = iterator(*this);
  ret.pos = static_cast<char *>(this->pos) - this->stride * n;
  return ret;
}

template <typename T>
typename Slice<T>::iterator::difference_type
Slice<T>::iterator::operator-(const iterator &other) const noexcept {
  auto diff = std::distance(static_cast<char *>(other.pos),
                            static_cast<char *>(this->pos));
  return diff / static_cast<typename Slice<T>::iterator::difference_type>(
                    this->stride);
}

template <typename T>
bool Slice<T>::iterator::operator==(const iterator &other) const noexcept {
  return this->pos == other.pos;
}

template <typename T>
bool Slice<T>::iterator::operator!=(const iterator &other) const noexcept {
  return this->pos != other.pos;
}

template <typename T>
bool Slice<T>::iterator::operator<(const iterator &other) const noexcept {
  return this->pos < other.pos;
}

template <typename T>
bool Slice<T>::iterator::operator<=(const iterator &other) const noexcept {
  return this->pos <= other.pos;
}

template <typename T>
bool Slice<T>::iterator::operator>(const iterator &other) const noexcept {
  return this->pos > other.pos;
}

template <typename T>
bool Slice<T>::iterator::operator>=(const iterator &other) const noexcept {
  return this->pos >= other.pos;
}

template <typename T>
typename Slice<T>::iterator Slice<T>::begin() const noexcept {
  iterator it;
  it.pos = slicePtr(this);
  it.stride = size_of<T>();
  return it;
}

template <typename T>
typename Slice<T>::iterator Slice<T>::end() const noexcept {
  iterator it = this->begin();
  it.pos = static_cast<char *>(it.pos) + it.stride * this->size();
  return it;
}

template <typename T>
void Slice<T>::swap(Slice &rhs) noexcept {
  std::swap(*this, rhs);
}
#endif // CXXBRIDGE1_RUST_SLICE

#ifndef CXXBRIDGE1_RUST_BOX
#define CXXBRIDGE1_RUST_BOX
template <typename T>
class Box final {
public:
  using element_type = T;
  using const_pointer =
      typename std::add_pointer<typename std::add_const<T>::type>::type;
  using pointer = typename std::add_pointer<T>::type;

  Box() = delete;
  Box(Box &&) noexcept;
  ~Box() noexcept;

  explicit Box(const T &);
  explicit Box(T &&);

  Box &operator=(Box &&) & noexcept;

  const T *operator->() const noexcept;
  const T &operator*() const noexcept;
  T *operator->() noexcept;
  T &operator*() noexcept;

  template <typename... Fields>
  static Box in_place(Fields &&...);

  void swap(Box &) noexcept;

  static Box from_raw(T *) noexcept;

  T *into_raw() noexcept;

  /* Deprecated */ using value_type = element_type;

private:
  class uninit;
  class allocation;
  Box(uninit) noexcept;
  void drop() noexcept;

  friend void swap(Box &lhs, Box &rhs) noexcept { lhs.swap(rhs); }

  T *ptr;
};

template <typename T>
class Box<T>::uninit {};

template <typename T>
class Box<T>::allocation {
  static T *alloc() noexcept;
  static void dealloc(T *) noexcept;

public:
  allocation() noexcept : ptr(alloc()) {}
  ~allocation() noexcept {
    if (this->ptr) {
      dealloc(this->ptr);
    }
  }
  T *ptr;
};

template <typename T>
Box<T>::Box(Box &&other) noexcept : ptr(other.ptr) {
  other.ptr = nullptr;
}

template <typename T>
Box<T>::Box(const T &val) {
  allocation alloc;
  ::new (alloc.ptr) T(val);
  this->ptr = alloc.ptr;
  alloc.ptr = nullptr;
}

template <typename T>
Box<T>::Box(T &&val) {
  allocation alloc;
  ::new (alloc.ptr) T(std::move(val));
  this->ptr = alloc.ptr;
  alloc.ptr = nullptr;
}

template <typename T>
Box<T>::~Box() noexcept {
  if (this->ptr) {
    this->drop();
  }
}

template <typename T>
Box<T> &Box<T>::operator=(Box &&other) & noexcept {
  if (this->ptr) {
    this->drop();
  }
  this->ptr = other.ptr;
  other.ptr = nullptr;
  return *this;
}

template <typename T>
const T *Box<T>::operator->() const noexcept {
  return this->ptr;
}

template <typename T>
const T &Box<T>::operator*() const noexcept {
  return *this->ptr;
}

template <typename T>
T *Box<T>::operator->() noexcept {
  return this->ptr;
}

template <typename T>
T &Box<T>::operator*() noexcept {
  return *this->ptr;
}

template <typename T>
template <typename... Fields>
Box<T> Box<T>::in_place(Fields &&...fields) {
  allocation alloc;
  auto ptr = alloc.ptr;
  ::new (ptr) T{std::forward<Fields>(fields)...};
  alloc.ptr = nullptr;
  return from_raw(ptr);
}

template <typename T>
void Box<T>::swap(Box &rhs) noexcept {
  using std::swap;
  swap(this->ptr, rhs.ptr);
}

template <typename T>
Box<T> Box<T>::from_raw(T *raw) noexcept {
  Box box = uninit{};
  box.ptr = raw;
  return box;
}

template <typename T>
T *Box<T>::into_raw() noexcept {
  T *raw = this->ptr;
  this->ptr = nullptr;
  return raw;
}

template <typename T>
Box<T>::Box(uninit) noexcept {}
#endif // CXXBRIDGE1_RUST_BOX

#ifndef CXXBRIDGE1_RUST_BITCOPY_T
#define CXXBRIDGE1_RUST_BITCOPY_T
struct unsafe_bitcopy_t final {
  explicit unsafe_bitcopy_t() = default;
};
#endif // CXXBRIDGE1_RUST_BITCOPY_T

#ifndef CXXBRIDGE1_RUST_VEC
#define CXXBRIDGE1_RUST_VEC
template <typename T>
class Vec final {
public:
  using value_type = T;

  Vec() noexcept;
  Vec(std::initializer_list<T>);
  Vec(const Vec &);
  Vec(Vec &&) noexcept;
  ~Vec() noexcept;

  Vec &operator=(Vec &&) & noexcept;
  Vec &operator=(const Vec &) &;

  std::size_t size() const noexcept;
  bool empty() const noexcept;
  const T *data() const noexcept;
  T *data() noexcept;
  std::size_t capacity() const noexcept;

  const T &operator[](std::size_t n) const noexcept;
  const T &at(std::size_t n) const;
  const T &front() const noexcept;
  const T &back() const noexcept;

  T &operator[](std::size_t n) noexcept;
  T &at(std::size_t n);
  T &front() noexcept;
  T &back() noexcept;

  void reserve(std::size_t new_cap);
  void push_back(const T &value);
  void push_back(T &&value);
  template <typename... Args>
  void emplace_back(Args &&...args);
  void truncate(std::size_t len);
  void clear();

  using iterator = typename Slice<T>::iterator;
  iterator begin() noexcept;
  iterator end() noexcept;

  using const_iterator = typename Slice<const T>::iterator;
  const_iterator begin() const noexcept;
  const_iterator end() const noexcept;
  const_iterator cbegin() const noexcept;
  const_iterator cend() const noexcept;

  void swap(Vec &) noexcept;

  Vec(unsafe_bitcopy_t, const Vec &) noexcept;

private:
  void reserve_total(std::size_t new_cap) noexcept;
  void set_len(std::size_t len) noexcept;
  void drop() noexcept;

  friend void swap(Vec &lhs, Vec &rhs) noexcept { lhs.swap(rhs); }

  std::array<std::uintptr_t, 3> repr;
};

template <typename T>
Vec<T>::Vec(std::initializer_list<T> init) : Vec{} {
  this->reserve_total(init.size());
  std::move(init.begin(), init.end(), std::back_inserter(*this));
}

template <typename T>
Vec<T>::Vec(const Vec &other) : Vec() {
  this->reserve_total(other.size());
  std::copy(other.begin(), other.end(), std::back_inserter(*this));
}

template <typename T>
Vec<T>::Vec(Vec &&other) noexcept : repr(other.repr) {
  new (&other) Vec();
}

template <typename T>
Vec<T>::~Vec() noexcept {
  this->drop();
}

template <typename T>
Vec<T> &Vec<T>::operator=(Vec &&other) & noexcept {
  this->drop();
  this->repr = other.repr;
  new (&other) Vec();
  return *this;
}

template <typename T>
Vec<T> &Vec<T>::operator=(const Vec &other) & {
  if (this != &other) {
    this->drop();
    new (this) Vec(other);
  }
  return *this;
}

template <typename T>
bool Vec<T>::empty() const noexcept {
  return this->size() == 0;
}

template <typename T>
const T &Vec<T>::operator[](std::size_t n) const noexcept {
  assert(n < this->size());
  auto data = reinterpret_cast<const char *>(this->data());
  return *reinterpret_cast<const T *>(data + n * size_of<T>());
}

template <typename T>
const T &Vec<T>::at(std::size_t n) const {
  if (n >= this->size()) {
    panic<std::out_of_range>("rust::Vec index out of range");
  }
  return (*this)[n];
}

template <typename T>
const T &Vec<T>::front() const noexcept {
  assert(!this->empty());
  return (*this)[0];
}

template <typename T>
const T &Vec<T>::back() const noexcept {
  assert(!this->empty());
  return (*this)[this->size() - 1];
}

template <typename T>
T &Vec<T>::operator[](std::size_t n) noexcept {
  assert(n < this->size());
  auto data = reinterpret_cast<char *>(this->data());
  return *reinterpret_cast<T *>(data + n * size_of<T>());
}

template <typename T>
T &Vec<T>::at(std::size_t n) {
  if (n >= this->size()) {
    panic<std::out_of_range>("rust::Vec index out of range");
  }
  return (*this)[n];
}

template <typename T>
T &Vec<T>::front() noexcept {
  assert(!this->empty());
  return (*this)[0];
}

template <typename T>
T &Vec<T>::back() noexcept {
  assert(!this->empty());
  return (*this)[this->size() - 1];
}

template <typename T>
void Vec<T>::reserve(std::size_t new_cap) {
  this->reserve_total(new_cap);
}

template <typename T>
void Vec<T>::push_back(const T &value) {
  this->emplace_back(value);
}

template <typename T>
void Vec<T>::push_back(T &&value) {
  this->emplace_back(std::move(value));
}

template <typename T>
template <typename... Args>
void Vec<T>::emplace_back(Args &&...args) {
  auto size = this->size();
  this->reserve_total(size + 1);
  ::new (reinterpret_cast<T *>(reinterpret_cast<char *>(this->data()) +
                               size * size_of<T>()))
      T(std::forward<Args>(args)...);
  this->set_len(size + 1);
}

template <typename T>
void Vec<T>::clear() {
  this->truncate(0);
}

template <typename T>
typename Vec<T>::iterator Vec<T>::begin() noexcept {
  return Slice<T>(this->data(), this->size()).begin();
}

template <typename T>
typename Vec<T>::iterator Vec<T>::end() noexcept {
  return Slice<T>(this->data(), this->size()).end();
}

template <typename T>
typename Vec<T>::const_iterator Vec<T>::begin() const noexcept {
  return this->cbegin();
}

template <typename T>
typename Vec<T>::const_iterator Vec<T>::end() const noexcept {
  return this->cend();
}

template <typename T>
typename Vec<T>::const_iterator Vec<T>::cbegin() const noexcept {
  return Slice<const T>(this->data(), this->size()).begin();
}

template <typename T>
typename Vec<T>::const_iterator Vec<T>::cend() const noexcept {
  return Slice<const T>(this->data(), this->size()).end();
}

template <typename T>
void Vec<T>::swap(Vec &rhs) noexcept {
  using std::swap;
  swap(this->repr, rhs.repr);
}

template <typename T>
Vec<T>::Vec(unsafe_bitcopy_t, const Vec &bits) noexcept : repr(bits.repr) {}
#endif // CXXBRIDGE1_RUST_VEC

#ifndef CXXBRIDGE1_RUST_OPAQUE
#define CXXBRIDGE1_RUST_OPAQUE
class Opaque {
public:
  Opaque() = delete;
  Opaque(const Opaque &) = delete;
  ~Opaque() = delete;
};
#endif // CXXBRIDGE1_RUST_OPAQUE

#ifndef CXXBRIDGE1_IS_COMPLETE
#define CXXBRIDGE1_IS_COMPLETE
namespace detail {
namespace {
template <typename T, typename = std::size_t>
struct is_complete : std::false_type {};
template <typename T>
struct is_complete<T, decltype(sizeof(T))> : std::true_type {};
} // namespace
} // namespace detail
#endif // CXXBRIDGE1_IS_COMPLETE

#ifndef CXXBRIDGE1_LAYOUT
#define CXXBRIDGE1_LAYOUT
class layout {
  template <typename T>
  friend std::size_t size_of();
  template <typename T>
  friend std::size_t align_of();
  template <typename T>
  static typename std::enable_if<std::is_base_of<Opaque, T>::value,
                                 std::size_t>::type
  do_size_of() {
    return T::layout::size();
  }
  template <typename T>
  static typename std::enable_if<!std::is_base_of<Opaque, T>::value,
                                 std::size_t>::type
  do_size_of() {
    return sizeof(T);
  }
  template <typename T>
  static
      typename std::enable_if<detail::is_complete<T>::value, std::size_t>::type
      size_of() {
    return do_size_of<T>();
  }
  template <typename T>
  static typename std::enable_if<std::is_base_of<Opaque, T>::value,
                                 std::size_t>::type
  do_align_of() {
    return T::layout::align();
  }
  template <typename T>
  static typename std::enable_if<!std::is_base_of<Opaque, T>::value,
                                 std::size_t>::type
  do_align_of() {
    return alignof(T);
  }
  template <typename T>
  static
      typename std::enable_if<detail::is_complete<T>::value, std::size_t>::type
      align_of() {
    return do_align_of<T>();
  }
};

template <typename T>
std::size_t size_of() {
  return layout::size_of<T>();
}

template <typename T>
std::size_t align_of() {
  return layout::align_of<T>();
}
#endif // CXXBRIDGE1_LAYOUT
} // namespace cxxbridge1
} // namespace rust

#if __cplusplus >= 201402L
#define CXX_DEFAULT_VALUE(value) = value
#else
#define CXX_DEFAULT_VALUE(value)
#endif

namespace icl {
  struct Dims;
  struct Batch;
  struct Circuits;
  struct Risk;
  struct LossGrad;
  struct LogRow;
  using ReproProgress = ::icl::ReproProgress;
  using SweepProgress = ::icl::SweepProgress;
  struct Config;
  struct TaskSampler;
  struct Model;
  struct Trainer;
}

namespace icl {
#ifndef CXXBRIDGE1_STRUCT_icl$Dims
#define CXXBRIDGE1_STRUCT_icl$Dims
// Shape of a task sampler, model or trainer (heads = n_params = 0 for a sampler).
struct Dims final {
  ::std::size_t d CXX_DEFAULT_VALUE(0);
  ::std::size_t n_out CXX_DEFAULT_VALUE(0);
  ::std::size_t heads CXX_DEFAULT_VALUE(0);
  ::std::size_t n_params CXX_DEFAULT_VALUE(0);
  ::std::size_t train_len CXX_DEFAULT_VALUE(0);
  bool is_f64 CXX_DEFAULT_VALUE(false);

  bool operator==(Dims const &) const noexcept;
  bool operator!=(Dims const &) const noexcept;
  using IsRelocatable = ::std::true_type;
};
#endif // CXXBRIDGE1_STRUCT_icl$Dims

#ifndef CXXBRIDGE1_STRUCT_icl$Batch
#define CXXBRIDGE1_STRUCT_icl$Batch
// A token-major batch: token l of sequence b is `z[(b (len+1) + l) (d+n_out) ..]`, x then y,
// the query last with y-slots 0; targets `y[b n_out ..]`.
struct Batch final {
  ::std::size_t n CXX_DEFAULT_VALUE(0);
  ::std::size_t len CXX_DEFAULT_VALUE(0);
  ::std::size_t d CXX_DEFAULT_VALUE(0);
  ::std::size_t n_out CXX_DEFAULT_VALUE(0);
  ::rust::Vec<double> z;
  ::rust::Vec<double> y;

  bool operator==(Batch const &) const noexcept;
  bool operator!=(Batch const &) const noexcept;
  using IsRelocatable = ::std::true_type;
};
#endif // CXXBRIDGE1_STRUCT_icl$Batch

#ifndef CXXBRIDGE1_STRUCT_icl$Circuits
#define CXXBRIDGE1_STRUCT_icl$Circuits
// Per-head circuits: omega (H values), mu (H x n_out, head-major).
struct Circuits final {
  ::rust::Vec<double> omega;
  ::rust::Vec<double> mu;

  bool operator==(Circuits const &) const noexcept;
  bool operator!=(Circuits const &) const noexcept;
  using IsRelocatable = ::std::true_type;
};
#endif // CXXBRIDGE1_STRUCT_icl$Circuits

#ifndef CXXBRIDGE1_STRUCT_icl$Risk
#define CXXBRIDGE1_STRUCT_icl$Risk
// A Monte Carlo risk and its standard error.
struct Risk final {
  double risk CXX_DEFAULT_VALUE(0);
  double std_error CXX_DEFAULT_VALUE(0);
  ::std::size_t samples CXX_DEFAULT_VALUE(0);

  bool operator==(Risk const &) const noexcept;
  bool operator!=(Risk const &) const noexcept;
  using IsRelocatable = ::std::true_type;
};
#endif // CXXBRIDGE1_STRUCT_icl$Risk

#ifndef CXXBRIDGE1_STRUCT_icl$LossGrad
#define CXXBRIDGE1_STRUCT_icl$LossGrad
// A loss and its gradient with respect to the flat parameters.
struct LossGrad final {
  double loss CXX_DEFAULT_VALUE(0);
  ::rust::Vec<double> grad;

  bool operator==(LossGrad const &) const noexcept;
  bool operator!=(LossGrad const &) const noexcept;
  using IsRelocatable = ::std::true_type;
};
#endif // CXXBRIDGE1_STRUCT_icl$LossGrad

#ifndef CXXBRIDGE1_STRUCT_icl$LogRow
#define CXXBRIDGE1_STRUCT_icl$LogRow
// A row of the training log (as in `metrics.csv`): the step, the loss, the per-head omega
// and mu (first output) columns (empty for the `eigs` task and multi-layer models, whose
// logs hold other columns), and the whole row in `Trainer::log_columns` order.
struct LogRow final {
  ::std::uint64_t step CXX_DEFAULT_VALUE(0);
  double loss CXX_DEFAULT_VALUE(0);
  ::rust::Vec<double> omega;
  ::rust::Vec<double> mu;
  ::rust::Vec<double> values;

  bool operator==(LogRow const &) const noexcept;
  bool operator!=(LogRow const &) const noexcept;
  using IsRelocatable = ::std::true_type;
};
#endif // CXXBRIDGE1_STRUCT_icl$LogRow

#ifndef CXXBRIDGE1_STRUCT_icl$Config
#define CXXBRIDGE1_STRUCT_icl$Config
// A run configuration.
struct Config final : public ::rust::Opaque {
  // Set a dotted key (value checked now; the config is unchanged on failure).
  void set(::rust::Str key, ::rust::Str value);

  // The value of a key as text.
  ::rust::String get(::rust::Str key) const;

  // Check the rules that involve several keys.
  void validate() const;

  // The configuration as TOML text.
  ::rust::String to_toml() const noexcept;

  ~Config() = delete;

private:
  friend ::rust::layout;
  struct layout {
    static ::std::size_t size() noexcept;
    static ::std::size_t align() noexcept;
  };
};
#endif // CXXBRIDGE1_STRUCT_icl$Config

#ifndef CXXBRIDGE1_STRUCT_icl$TaskSampler
#define CXXBRIDGE1_STRUCT_icl$TaskSampler
// A task sampler.
struct TaskSampler final : public ::rust::Opaque {
  // Shape (d, n_out, train_len).
  ::icl::Dims dims() const noexcept;

  // n sequences of context length len from streams (seed, train or eval, step, b).
  ::icl::Batch sample(::std::uint64_t seed, bool eval, ::std::uint64_t step, ::std::size_t n, ::std::size_t len) const;

  ~TaskSampler() = delete;

private:
  friend ::rust::layout;
  struct layout {
    static ::std::size_t size() noexcept;
    static ::std::size_t align() noexcept;
  };
};
#endif // CXXBRIDGE1_STRUCT_icl$TaskSampler

#ifndef CXXBRIDGE1_STRUCT_icl$Model
#define CXXBRIDGE1_STRUCT_icl$Model
// A model and its engine.
struct Model final : public ::rust::Opaque {
  // Write a checkpoint.
  void save(::rust::Str path) const;

  // Run with another engine.
  void set_engine(::rust::Str name);

  // Shape.
  ::icl::Dims dims() const noexcept;

  // A copy of the model's configuration.
  ::rust::Box<::icl::Config> config() const noexcept;

  // Predictions [n][n_out] for contexts x [n][len][d], y [n][len][n_out], queries xq [n][d].
  ::rust::Vec<double> predict(::std::size_t n, ::std::size_t len, ::rust::Slice<double const> x, ::rust::Slice<double const> y, ::rust::Slice<double const> xq);

  // Predictions on n prompts of k pairs (xs [n][k][d], ys [n][k]): [n][k] for GPT-2 models
  // (the prediction at every x position), [n][n_out] otherwise (the last x as the query).
  ::rust::Vec<double> predict_prompts(::std::size_t n, ::std::size_t k, ::rust::Slice<double const> xs, ::rust::Slice<double const> ys);

  // Predictions [n][n_out] for a batch.
  ::rust::Vec<double> predict_batch(::icl::Batch const &batch);

  // Loss and parameter gradient on a batch.
  ::icl::LossGrad loss_grad(::icl::Batch const &batch);

  // Flat parameters.
  ::rust::Vec<double> params() const noexcept;

  // Replace the flat parameters.
  void set_params(::rust::Slice<double const> params);

  // Per-head circuits.
  ::icl::Circuits circuits() const;

  // Monte Carlo risk at test length len on the model's own task.
  ::icl::Risk risk(::std::size_t len, ::std::size_t samples, ::std::uint64_t seed);

  // Monte Carlo risk at test length len on another task.
  ::icl::Risk risk_on(::icl::TaskSampler const &task, ::std::size_t len, ::std::size_t samples, ::std::uint64_t seed);

  ~Model() = delete;

private:
  friend ::rust::layout;
  struct layout {
    static ::std::size_t size() noexcept;
    static ::std::size_t align() noexcept;
  };
};
#endif // CXXBRIDGE1_STRUCT_icl$Model

#ifndef CXXBRIDGE1_STRUCT_icl$Trainer
#define CXXBRIDGE1_STRUCT_icl$Trainer
// The training loop of `icl train`.
struct Trainer final : public ::rust::Opaque {
  // Run steps on the trainer's own batches; returns their mean loss.
  double train(::std::uint64_t steps);

  // Run steps; returns the loss of each.
  ::rust::Vec<double> train_losses(::std::uint64_t steps);

  // One step on a caller's batch; returns its loss.
  double step_batch(::icl::Batch const &batch);

  // Steps completed.
  ::std::uint64_t step_count() const noexcept;

  // The engine's name.
  ::rust::String engine() const noexcept;

  // Shape.
  ::icl::Dims dims() const noexcept;

  // Flat parameters.
  ::rust::Vec<double> params() const noexcept;

  // Replace the flat parameters (optimiser state kept).
  void set_params(::rust::Slice<double const> params);

  // Per-head circuits.
  ::icl::Circuits circuits() const;

  // A copy of the current model.
  ::rust::Box<::icl::Model> model() const;

  // Write the current model as a checkpoint.
  void save(::rust::Str path) const;

  // The training log.
  ::rust::Vec<::icl::LogRow> log() const noexcept;

  // The names of the log's columns (the header of `metrics.csv`: step, loss, then every
  // logged quantity), the order of `LogRow::values`.
  ::rust::Vec<::rust::String> log_columns() const noexcept;

  ~Trainer() = delete;

private:
  friend ::rust::layout;
  struct layout {
    static ::std::size_t size() noexcept;
    static ::std::size_t align() noexcept;
  };
};
#endif // CXXBRIDGE1_STRUCT_icl$Trainer

// The library version.
::rust::String version() noexcept;

// The engine `icl train` uses without `--engine`.
::rust::String default_engine() noexcept;

// The configuration of a preset.
::rust::Box<::icl::Config> config_preset(::rust::Str name);

// A configuration from TOML text (defaults: the he2025 preset).
::rust::Box<::icl::Config> config_from_toml(::rust::Str toml);

// The sampler of a configuration.
::rust::Box<::icl::TaskSampler> task_sampler(::icl::Config const &cfg);

// A freshly initialised model of a configuration.
::rust::Box<::icl::Model> model_new(::icl::Config const &cfg);

// Load a checkpoint (the model.safetensors of `icl train`).
::rust::Box<::icl::Model> model_load(::rust::Str path);

// A trainer for a configuration with the named engine ("" = the default engine).
::rust::Box<::icl::Trainer> trainer_new(::icl::Config const &cfg, ::rust::Str engine);

// A trainer continuing from a checkpoint: with the trainer state of `icl train` or
// `Trainer::save` it continues bit for bit (optimiser moments, log, step); from a model
// checkpoint it starts a fresh optimiser at the saved parameters and step.
::rust::Box<::icl::Trainer> trainer_from_checkpoint(::rust::Str path, ::rust::Str engine);

// Every theory quantity as JSON (`icl theory --list --json`).
::rust::String theory_list();

// Evaluate a theory quantity with parameters as text; the result as JSON
// (`icl theory NAME --json`).
::rust::String theory_eval(::rust::Str name, ::rust::Vec<::rust::String> const &keys, ::rust::Vec<::rust::String> const &values);

// Evaluate a theory quantity; its main value as numbers (one for a scalar quantity).
::rust::Vec<double> theory_value(::rust::Str name, ::rust::Vec<::rust::String> const &keys, ::rust::Vec<::rust::String> const &values);

// The options of an entry point (`"train"`, `"eval"`, `"repro"`, `"sweep_run"`) as JSON,
// as `icl_options_list` in `icl.h` gives them.
::rust::String options_list(::rust::Str name);

// Train `cfg` into the run folder `out_dir` like `icl train --out OUT_DIR` and return
// the text of its `summary.json`; options as `icl_train_run` in `icl.h` takes them
// (`steps`, `seed`, `engine`, `force`, `eval_samples`, `checkpoint_every`,
// `checkpoint_minutes`). Blocks until the run is done; prints nothing. Throws where
// `icl_train_run` returns a status; every bad option is reported before training.
::rust::String train_run(::icl::Config const &cfg, ::rust::Str out_dir, ::rust::Vec<::rust::String> const &keys, ::rust::Vec<::rust::String> const &values);

// Evaluate the run folder `dir` like `icl eval DIR --json` and return that JSON
// (`{"rows": [{"estimator", "L", "risk", "stderr", ...}], ...}`), the options as text
// pairs `keys[i]` = `values[i]` exactly as `icl_eval_run` in `icl.h` takes them
// (`lengths` = `"10,20,40"`, `samples`, `seed`, `engine`, `tau`, `shift.*`, and for
// transformer runs `lambda_range`, `stack`, `layers_out`, `alignment`, `ref`). Throws
// where `icl_eval_run` returns a status (the same message). Nothing is written.
::rust::String eval_run(::rust::Str dir, ::rust::Vec<::rust::String> const &keys, ::rust::Vec<::rust::String> const &values);

// Draw evaluation rows (the JSON `eval_run` returns) against L', with error bars, into
// `path`: PNG if it ends in `.png`, SVG otherwise (`icl eval --plot`). Throws where
// `icl_eval_plot` returns a status.
void eval_plot(::rust::Str rows_json, ::rust::Str path);

// Reproduce `paper` (`"he2025"`, `"zhang2025"`, `"multilayer"`, `"temperature"`, `"garg"`) into
// `out_dir` like `icl repro PAPER --out OUT_DIR --json` and return `report.json`'s text;
// options as `icl_repro` in `icl.h` takes them (`scale`, `only`, `jobs`, `engine`,
// `set.KEY`). Runs already complete under `OUT_DIR/runs/` are skipped, interrupted ones
// resumed. Blocks until every run is done; prints nothing. Throws where `icl_repro`
// returns a status; every bad option is reported before anything is written.
::rust::String repro(::rust::Str paper, ::rust::Str out_dir, ::rust::Vec<::rust::String> const &keys, ::rust::Vec<::rust::String> const &values);

// `repro` reporting each run's start and end to `progress` (see `icl/progress.h`). The
// same options, files, result and exceptions as `repro`, and `rust::Error` ("the progress
// receiver threw: ...") once every run is done when `progress` threw (it cannot stop the
// reproduction; no later event is reported).
::rust::String repro_with_progress(::rust::Str paper, ::rust::Str out_dir, ::rust::Vec<::rust::String> const &keys, ::rust::Vec<::rust::String> const &values, ::icl::ReproProgress &progress);

// Expand the sweep file `file` into the sweep folder `out_dir` like
// `icl sweep plan FILE --out OUT_DIR --json` and return the planned runs as a JSON array
// (`{"index", "name", "values", "preset" or "config", "set"}`). Throws where
// `icl_sweep_plan` in `icl.h` returns a status.
::rust::String sweep_plan(::rust::Str file, ::rust::Str out_dir);

// Train the runs of the sweep folder `dir` like `icl sweep run DIR --json` and return
// the results as a JSON array (`{"name", "status", "steps", "seconds", "steps_per_s",
// "wall_seconds"}`); options as `icl_sweep_run` takes them (`jobs`, `index`, `runs_per_task`, `engine`,
// `eval_samples`, `checkpoint_minutes`, `checkpoint_every`, `force`). Complete runs are
// skipped, interrupted ones resumed; prints nothing. Throws where `icl_sweep_run`
// returns a status (a run that failed: after every run was tried, its message).
::rust::String sweep_run(::rust::Str dir, ::rust::Vec<::rust::String> const &keys, ::rust::Vec<::rust::String> const &values);

// `sweep_run` reporting each run's steps to `progress` (see `icl/progress.h`), which can
// interrupt the sweep by returning false: then the runs training are checkpointed and
// stop, the others do not start, and the results say `"interrupted"` (with `"step"`) and
// `"not_started"`; calling again resumes them. The same options, files, results and
// exceptions as `sweep_run`, and `rust::Error` ("the progress receiver threw: ...") after
// an exception from `progress`, which interrupts the sweep in the same way.
::rust::String sweep_run_with_progress(::rust::Str dir, ::rust::Vec<::rust::String> const &keys, ::rust::Vec<::rust::String> const &values, ::icl::SweepProgress &progress);

// The state of every run of the sweep folder `dir`: the objects `icl sweep status DIR
// --json` prints one per line, as one JSON array (`{"index", "name", "state", ...}`). Throws where
// `icl_sweep_status` returns a status.
::rust::String sweep_status(::rust::Str dir);

// Draw the training figures of the finished run `dir` again like `icl plot DIR
// --json` and return `{"dir", "figures"}`. Throws where `icl_run_plot` returns a
// status.
::rust::String run_plot(::rust::Str dir);

// Collect the sweep folder `dir` like `icl sweep collect DIR --json` (writes
// `results.csv`, `results.json`, `runs.csv`, plots) and return `{"columns", "rows",
// "incomplete", "files"}`; `partial` leaves out runs not complete instead of throwing.
// Throws where `icl_sweep_collect` returns a status.
::rust::String sweep_collect(::rust::Str dir, bool partial);
} // namespace icl

#ifdef __clang__
#pragma clang diagnostic pop
#endif // __clang__
