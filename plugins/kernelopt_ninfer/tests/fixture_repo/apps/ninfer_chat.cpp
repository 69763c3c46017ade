// Placeholder for upstream's chat app; built only with NINFER_BUILD_APPS=ON (needs FFmpeg).
#include <cstdio>

int main() {
    std::puts("ninfer_chat: the fixture has no model; this app only exists for NINFER_BUILD_APPS");
    return 0;
}
