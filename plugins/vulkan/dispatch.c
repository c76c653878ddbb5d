/*
 * Recording one kernel dispatch: descriptor ranges for the operands, the
 * descriptors themselves (pushed with VK_KHR_push_descriptor when the
 * device has it, else a set from the frame's pool), push constants, and
 * vkCmdDispatch after the stream's ordering barrier.
 */
#include "vk_plugin.h"

typedef unsigned long long ull;

hc_status hc_vk_range_of(hc_device *dev, const char *op, const char *name, hc_ref r,
                         uint64_t bytes, uint32_t elem, hc_vk_range *out, uint32_t *elem_off)
{
    /* Offsets of descriptor ranges must be multiples of the device's
     * alignment: bind from the aligned offset below and tell the shader
     * where the data starts.  r.off is a multiple of elem (checked), and
     * bind_align of 16, so the distance is whole elements. */
    uint64_t off = r.off & ~(dev->bind_align - 1);
    uint64_t delta = r.off - off;
    /* Whole 32-bit words: word loads of the last bytes stay in range (the
     * buffer has 16 bytes of padding past its size, see memory.c). */
    uint64_t range = (delta + bytes + 3) & ~(uint64_t)3;
    if (range == 0)
        range = 4;
    if (range > dev->window)
        return hc_vk_fail(dev->ctx, HC_E_UNSUPPORTED,
                          "%s: %s: %llu bytes exceed one binding (maxStorageBufferRange %llu)", op,
                          name, (ull)bytes, (ull)dev->window);
    *out = (hc_vk_range){r.buf->buf, off, range};
    *elem_off = (uint32_t)(delta / elem);
    return HC_OK;
}

static VkDescriptorBufferInfo info_of(const hc_vk_range *r)
{
    return (VkDescriptorBufferInfo){r->buf, r->off, r->range};
}

hc_status hc_vk_record_dispatch(hc_stream *s, const char *op, const hc_vk_dispatch *d)
{
    hc_device *dev = s->dev;
    VkPipeline pipe;
    hc_vk_frame *f;
    hc_status st;

    if ((st = hc_vk_pipeline(dev, d->kernel, d->tile, &pipe)) != HC_OK ||
        (st = hc_vk_stream_cmd(s, op, &f)) != HC_OK)
        return st;
    VkDescriptorBufferInfo info[HC_VK_N_DESCRIPTORS];
    for (int i = 0; i < HC_VK_WINDOWS; i++)
        info[i] = info_of(&d->w[i]);
    info[HC_VK_WINDOWS + 0] = info_of(&d->a);
    info[HC_VK_WINDOWS + 1] = info_of(&d->b);
    info[HC_VK_WINDOWS + 2] = info_of(&d->c);
    info[HC_VK_WINDOWS + 3] = info_of(&d->d);
    info[HC_VK_WINDOWS + 4] = info_of(d->e.buf ? &d->e : &d->a);
    VkWriteDescriptorSet wr[HC_VK_N_BINDINGS];
    for (uint32_t b = 0; b < HC_VK_N_BINDINGS; b++)
        wr[b] = (VkWriteDescriptorSet){
            .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
            .dstBinding = b,
            .descriptorCount = b == HC_VK_BIND_W ? HC_VK_WINDOWS : 1,
            .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
            .pBufferInfo = b == HC_VK_BIND_W ? &info[0] : &info[HC_VK_WINDOWS + b - 1]};
    dev->f.vkCmdBindPipeline(f->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipe);
    if (dev->feats & HC_VK_FEAT_PUSH_DESCRIPTORS) {
        dev->f.vkCmdPushDescriptorSetKHR(f->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, dev->layout, 0,
                                         HC_VK_N_BINDINGS, wr);
    } else {
        VkDescriptorSet set;
        VkDescriptorSetAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                          .descriptorPool = f->pool,
                                          .descriptorSetCount = 1,
                                          .pSetLayouts = &dev->set_layout};
        VkResult r = dev->f.vkAllocateDescriptorSets(dev->dev, &ai, &set);
        if (r != VK_SUCCESS) /* cannot happen: a set per command, pool sized to match */
            return hc_vk_fail_vk(dev->ctx, r, "vkAllocateDescriptorSets");
        for (int b = 0; b < HC_VK_N_BINDINGS; b++)
            wr[b].dstSet = set;
        dev->f.vkUpdateDescriptorSets(dev->dev, HC_VK_N_BINDINGS, wr, 0, NULL);
        dev->f.vkCmdBindDescriptorSets(f->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, dev->layout, 0, 1,
                                       &set, 0, NULL);
    }
    dev->f.vkCmdPushConstants(f->cmd, dev->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, d->push_bytes,
                              d->push);
    dev->f.vkCmdDispatch(f->cmd, d->groups_x, d->groups_y, 1);
    return hc_vk_stream_cmd_done(s, op);
}
