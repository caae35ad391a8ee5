// Owning handles for the memory ess-bench allocates: device memory, pinned (page-locked, mapped)
// host memory and ordinary pageable host memory. Allocation failures exit through the check
// macros; frees are unchecked (destructors, and a failed free changes no measurement).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "kernels/cuda/check.h"

namespace ess::bench {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  // On the current device.
  explicit DeviceBuffer(std::int64_t bytes) : bytes_(bytes) {
    ESS_CUDA_CHECK(cudaGetDevice(&device_));
    if (bytes > 0) ESS_CUDA_CHECK(cudaMalloc(&ptr_, static_cast<std::size_t>(bytes)));
  }
  ~DeviceBuffer() { reset(); }
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : ptr_(other.ptr_), bytes_(other.bytes_), device_(other.device_) {
    other.ptr_ = nullptr;
    other.bytes_ = 0;
  }
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      reset();
      ptr_ = other.ptr_;
      bytes_ = other.bytes_;
      device_ = other.device_;
      other.ptr_ = nullptr;
      other.bytes_ = 0;
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  // Frees on the device that allocated it (peer and NCCL buffers live on other devices).
  void reset() {
    if (ptr_ != nullptr) {
      int current = device_;
      cudaGetDevice(&current);
      if (current != device_) cudaSetDevice(device_);
      cudaFree(ptr_);
      if (current != device_) cudaSetDevice(current);
    }
    ptr_ = nullptr;
    bytes_ = 0;
  }
  [[nodiscard]] std::byte* data() const { return static_cast<std::byte*>(ptr_); }
  [[nodiscard]] std::int64_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  std::int64_t bytes_ = 0;
  int device_ = 0;
};

// Page-locked host memory, mapped into every device's address space (portable), so kernels can
// read and write it directly through device_data().
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(std::int64_t bytes) : bytes_(bytes) {
    if (bytes > 0) {
      ESS_CUDA_CHECK(cudaHostAlloc(&ptr_, static_cast<std::size_t>(bytes),
                                   cudaHostAllocMapped | cudaHostAllocPortable));
      ESS_CUDA_CHECK(cudaHostGetDevicePointer(&device_ptr_, ptr_, 0));
    }
  }
  ~PinnedBuffer() {
    if (ptr_ != nullptr) cudaFreeHost(ptr_);
  }
  PinnedBuffer(PinnedBuffer&& other) noexcept
      : ptr_(other.ptr_), device_ptr_(other.device_ptr_), bytes_(other.bytes_) {
    other.ptr_ = nullptr;
    other.device_ptr_ = nullptr;
    other.bytes_ = 0;
  }
  PinnedBuffer& operator=(PinnedBuffer&&) = delete;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  [[nodiscard]] std::byte* data() const { return static_cast<std::byte*>(ptr_); }
  [[nodiscard]] std::byte* device_data() const { return static_cast<std::byte*>(device_ptr_); }
  [[nodiscard]] std::int64_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  void* device_ptr_ = nullptr;
  std::int64_t bytes_ = 0;
};

// Ordinary malloc'd memory (what a framework's CPU tensors are unless pinned).
class PageableBuffer {
 public:
  PageableBuffer() = default;
  explicit PageableBuffer(std::int64_t bytes)
      : data_(std::make_unique<std::byte[]>(static_cast<std::size_t>(bytes))), bytes_(bytes) {}

  [[nodiscard]] std::byte* data() const { return data_.get(); }
  [[nodiscard]] std::int64_t bytes() const { return bytes_; }

 private:
  std::unique_ptr<std::byte[]> data_;
  std::int64_t bytes_ = 0;
};

}  // namespace ess::bench
