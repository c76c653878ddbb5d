/*
 * The Vulkan entry points the plugin uses, as X-macro lists.  The plugin
 * never links libvulkan: loader.c dlopens it and fills tables generated
 * from these lists, so the plugin loads (and reports no devices) on a
 * machine without the Vulkan loader.  Add a function here to use it.
 */
#ifndef HC_VK_FUNCTIONS_H
#define HC_VK_FUNCTIONS_H

/* Through vkGetInstanceProcAddr(NULL, ...).  vkEnumerateInstanceVersion
 * is NULL on a Vulkan 1.0 loader. */
#define HC_VK_GLOBAL_FUNCTIONS(X)                                                           \
    X(vkCreateInstance)                                                                     \
    X(vkEnumerateInstanceExtensionProperties)                                               \
    X(vkEnumerateInstanceVersion)

/* Through vkGetInstanceProcAddr(instance, ...). */
#define HC_VK_INSTANCE_FUNCTIONS(X)                                                         \
    X(vkDestroyInstance)                                                                    \
    X(vkEnumeratePhysicalDevices)                                                           \
    X(vkGetPhysicalDeviceProperties)                                                        \
    X(vkGetPhysicalDeviceProperties2)                                                       \
    X(vkGetPhysicalDeviceFeatures2)                                                         \
    X(vkGetPhysicalDeviceMemoryProperties)                                                  \
    X(vkGetPhysicalDeviceMemoryProperties2)                                                 \
    X(vkGetPhysicalDeviceQueueFamilyProperties)                                             \
    X(vkEnumerateDeviceExtensionProperties)                                                 \
    X(vkCreateDevice)                                                                       \
    X(vkGetDeviceProcAddr)

/* Through vkGetDeviceProcAddr(device, ...), one table per hc_device. */
#define HC_VK_DEVICE_FUNCTIONS(X)                                                           \
    X(vkDestroyDevice)                                                                      \
    X(vkGetDeviceQueue)                                                                     \
    X(vkDeviceWaitIdle)                                                                     \
    X(vkCreateBuffer)                                                                       \
    X(vkDestroyBuffer)                                                                      \
    X(vkGetBufferMemoryRequirements)                                                        \
    X(vkAllocateMemory)                                                                     \
    X(vkFreeMemory)                                                                         \
    X(vkBindBufferMemory)                                                                   \
    X(vkMapMemory)                                                                          \
    X(vkUnmapMemory)                                                                        \
    X(vkCreateCommandPool)                                                                  \
    X(vkDestroyCommandPool)                                                                 \
    X(vkAllocateCommandBuffers)                                                             \
    X(vkBeginCommandBuffer)                                                                 \
    X(vkEndCommandBuffer)                                                                   \
    X(vkResetCommandPool)                                                                   \
    X(vkCmdCopyBuffer)                                                                      \
    X(vkCmdPipelineBarrier)                                                                 \
    X(vkCmdBindPipeline)                                                                    \
    X(vkCmdBindDescriptorSets)                                                              \
    X(vkCmdPushConstants)                                                                   \
    X(vkCmdDispatch)                                                                        \
    X(vkCreateFence)                                                                        \
    X(vkDestroyFence)                                                                       \
    X(vkWaitForFences)                                                                      \
    X(vkResetFences)                                                                        \
    X(vkCreateQueryPool)                                                                    \
    X(vkDestroyQueryPool)                                                                   \
    X(vkCmdResetQueryPool)                                                                  \
    X(vkCmdWriteTimestamp)                                                                  \
    X(vkGetQueryPoolResults)                                                                \
    X(vkQueueSubmit)                                                                        \
    X(vkCreateShaderModule)                                                                 \
    X(vkDestroyShaderModule)                                                                \
    X(vkCreateComputePipelines)                                                             \
    X(vkDestroyPipeline)                                                                    \
    X(vkCreatePipelineLayout)                                                               \
    X(vkDestroyPipelineLayout)                                                              \
    X(vkCreateDescriptorSetLayout)                                                          \
    X(vkDestroyDescriptorSetLayout)                                                         \
    X(vkCreateDescriptorPool)                                                               \
    X(vkDestroyDescriptorPool)                                                              \
    X(vkResetDescriptorPool)                                                                \
    X(vkAllocateDescriptorSets)                                                             \
    X(vkUpdateDescriptorSets)

/* Device functions of extensions: NULL when the extension is not enabled. */
#define HC_VK_DEVICE_EXT_FUNCTIONS(X) X(vkCmdPushDescriptorSetKHR)

#endif /* HC_VK_FUNCTIONS_H */
