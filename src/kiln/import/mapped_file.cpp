#include "kiln/import/mapped_file.h"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kiln/support/error.h"

namespace kiln {

namespace {

// Closes a file descriptor when it goes out of scope.
struct FdGuard {
  int fd;
  ~FdGuard() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::shared_ptr<const MappedFile> MappedFile::open(const std::string& path) {
  FdGuard fd{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  KILN_CHECK(fd.fd >= 0, "{}: cannot open: {}", path, std::strerror(errno));
  struct stat st {};
  KILN_CHECK(::fstat(fd.fd, &st) == 0, "{}: cannot stat: {}", path, std::strerror(errno));
  KILN_CHECK(S_ISREG(st.st_mode), "{}: not a regular file", path);
  std::shared_ptr<MappedFile> file(new MappedFile());
  file->path_ = path;
  file->size_ = static_cast<size_t>(st.st_size);
  if (file->size_ == 0) return file;  // mmap refuses length 0; an empty span will do
  // Private and writable: pages are shared with the page cache until written, and a write (a tensor
  // over a weight updated in place, a buffer's running statistics) copies its page, never the file.
  void* p = ::mmap(nullptr, file->size_, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd.fd, 0);
  KILN_CHECK(p != MAP_FAILED, "{}: cannot map {} bytes: {}", path, file->size_, std::strerror(errno));
  file->mapping_ = p;
  file->data_ = static_cast<const std::byte*>(p);
  return file;
}

std::shared_ptr<const MappedFile> MappedFile::from_bytes(std::vector<std::byte> bytes, std::string name) {
  std::shared_ptr<MappedFile> file(new MappedFile());
  file->path_ = std::move(name);
  file->owned_ = std::move(bytes);
  file->data_ = file->owned_.data();
  file->size_ = file->owned_.size();
  return file;
}

MappedFile::~MappedFile() {
  if (mapping_) ::munmap(mapping_, size_);
}

}  // namespace kiln
